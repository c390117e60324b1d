import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { IdentityDeps } from './deps.ts';

/** MFA challenge token: uuid, single use, valid 5 minutes (docs/api/identity.md#login-lockout-and-mfa). */
export const CHALLENGE_MS = 5 * 60 * 1000;

/** Where the first factor came from: recorded in the `user.login` audit entry once the second one is given. */
export const Challenge = z.object({
  user_id: z.uuid(),
  expires_at: z.number(),
  method: z.enum(['password', 'sso']).default('password'),
});
export type Challenge = z.infer<typeof Challenge>;

export const challengeKey = (token: string): string => `mfa:challenge:${token}`;

/** Issued by a password login and by an SSO callback alike; completed at POST /api/v1/auth/mfa/verify. */
export async function createMfaChallenge(
  deps: Pick<IdentityDeps, 'kv' | 'clock'>,
  userId: string,
  method: Challenge['method'],
): Promise<string> {
  const token = randomUUID();
  const challenge: Challenge = { user_id: userId, expires_at: deps.clock.now() + CHALLENGE_MS, method };
  await deps.kv.set(challengeKey(token), JSON.stringify(challenge), { ttlMs: CHALLENGE_MS });
  return token;
}
