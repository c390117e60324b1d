/**
 * What the identity domain offers code outside it: verifying an access token locally (the signing key is shared with
 * the gateways) and reading the access cache the domain keeps in Valkey. Everything else is asked through the
 * identity subjects.
 */
export { AccessTokens } from './crypto.ts';
export { AccessCache, liveKey } from './access.ts';
