import pkg from '../package.json' with { type: 'json' };

/**
 * The release, from package.json alone: the invoicing gateway's /healthz, the reference agent's --version and its
 * heartbeats all report this, so a release is one edit there (and a CHANGELOG.md entry).
 */
export const VERSION: string = pkg.version;
