import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { randomToken, sha256 } from './crypto.ts';
import type { IdentityDeps } from './deps.ts';

export type OneTimePurpose = 'reset' | 'invite';

/** Reset tokens live 1 hour, invitation tokens 24 hours (docs/api/identity.md#tokens-sessions-passwords-invitations). */
export const ONE_TIME_TTL_MS: Record<OneTimePurpose, number> = { reset: 60 * 60 * 1000, invite: 24 * 60 * 60 * 1000 };

/**
 * Creates a reset or invitation token for a user and returns it raw (32 random bytes, base64url): the only time it
 * exists in clear. Only its SHA-256 is stored. Older unused tokens of the same purpose stop working at once (marked
 * used), so only the latest link in the user's mailbox is valid. One statement: the two steps cannot half-happen.
 */
export async function createOneTimeToken(
  em: EntityManager,
  deps: Pick<IdentityDeps, 'clock'>,
  userId: string,
  purpose: OneTimePurpose,
): Promise<string> {
  const raw = randomToken();
  const now = deps.clock.now();
  await em.execute(
    `WITH superseded AS (
       UPDATE one_time_tokens SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL
     )
     INSERT INTO one_time_tokens (id, user_id, purpose, token_hash, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
    [
      new Date(now),
      userId,
      purpose,
      randomUUID(),
      userId,
      purpose,
      sha256(raw),
      new Date(now + ONE_TIME_TTL_MS[purpose]),
      new Date(now),
    ],
  );
  return raw;
}

/**
 * Redeems a token: one conditional update (unused, unexpired, right purpose), so of two racing requests exactly one
 * gets the user id and the other gets null. Run it inside the transaction that uses the token, so a failure after it
 * rolls the redemption back too.
 */
export async function consumeOneTimeToken(
  em: EntityManager,
  deps: Pick<IdentityDeps, 'clock'>,
  rawToken: string,
  purpose: OneTimePurpose,
): Promise<{ user_id: string } | null> {
  const now = new Date(deps.clock.now());
  const rows = await em.execute<{ user_id: string }[]>(
    `UPDATE one_time_tokens SET used_at = ? WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ? RETURNING user_id`,
    [now, sha256(rawToken), purpose, now],
  );
  return rows[0] ?? null;
}

/** The user a token would redeem for, without redeeming it (to run checks before the redeeming transaction). */
export async function peekOneTimeToken(
  em: EntityManager,
  deps: Pick<IdentityDeps, 'clock'>,
  rawToken: string,
  purpose: OneTimePurpose,
): Promise<{ user_id: string } | null> {
  const rows = await em.execute<{ user_id: string }[]>(
    `SELECT user_id FROM one_time_tokens WHERE token_hash = ? AND purpose = ? AND used_at IS NULL AND expires_at > ?`,
    [sha256(rawToken), purpose, new Date(deps.clock.now())],
  );
  return rows[0] ?? null;
}

/** Voids a user's outstanding tokens of one purpose (a password change cancels pending reset links). */
export async function cancelOneTimeTokens(
  em: EntityManager,
  deps: Pick<IdentityDeps, 'clock'>,
  userId: string,
  purpose: OneTimePurpose,
): Promise<void> {
  await em.execute(`UPDATE one_time_tokens SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL`, [
    new Date(deps.clock.now()),
    userId,
    purpose,
  ]);
}
