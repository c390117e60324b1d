import { randomUUID } from 'node:crypto';
import type { IdentityDeps } from '../deps.ts';

/** MFA challenge token: uuid, single use, valid 5 minutes (console-identity.md, Tokens). */
const CHALLENGE_MS = 5 * 60 * 1000;

/**
 * The login MFA challenge for a user who signed in through SSO, completed at POST /api/v1/auth/mfa/verify exactly like
 * a password login's. It must stay in the session actor's format (actors/identity/session/login.ts:
 * `mfa:challenge:<uuid>` → {user_id, expires_at}); `method` tells the verifier where the first factor came from.
 */
export async function createSsoMfaChallenge(deps: IdentityDeps, userId: string): Promise<string> {
  const token = randomUUID();
  const now = deps.clock.now();
  await deps.kv.set(`mfa:challenge:${token}`, JSON.stringify({ user_id: userId, expires_at: now + CHALLENGE_MS, method: 'sso' }), { ttlMs: CHALLENGE_MS });
  return token;
}
