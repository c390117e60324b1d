import { DomainError } from '../../../contracts/errors.ts';
import type { IdentityDeps } from '../deps.ts';
import { Lockout } from '../lockout.ts';

/** What the session actor's handlers share: the identity deps and the three lockout counters. */
export interface SessionServices {
  deps: IdentityDeps;
  /** Password failures at login, per lower-cased e-mail. */
  loginLockout: Lockout;
  /** Code failures at /auth/mfa/verify, per user: its own counter, so a phished password cannot burn MFA tries. */
  mfaLockout: Lockout;
  /** Wrong current passwords of signed-in users (password change, MFA removal), per user. */
  reauthLockout: Lockout;
}

export function sessionServices(deps: IdentityDeps): SessionServices {
  return {
    deps,
    loginLockout: new Lockout(deps.kv, deps.clock, 'login'),
    mfaLockout: new Lockout(deps.kv, deps.clock, 'mfa'),
    reauthLockout: new Lockout(deps.kv, deps.clock, 'reauth'),
  };
}

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** The one answer for a wrong e-mail, a wrong password and an account that may not sign in. */
export const invalidCredentials = (): DomainError => new DomainError('unauthorized', 'invalid e-mail or password');

/** Timestamps on the wire: ISO 8601 UTC. Raw queries give Date objects (timestamptz) but be lenient with strings. */
export const iso = (v: Date | string): string => (v instanceof Date ? v : new Date(v)).toISOString();

/** Audit failures must not turn a completed action into an error, but they must be seen. */
export async function auditQuietly(deps: IdentityDeps, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    deps.log.error({ err }, 'audit entry could not be recorded');
  }
}
