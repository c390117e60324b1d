import type { EntityManager } from '@mikro-orm/postgresql';
import type { IdentityDeps } from '../../deps.ts';
import { cancelOneTimeTokens } from '../../one-time-tokens.ts';
import { sql } from '../common.ts';

export async function revokeAllSessions(
  em: EntityManager,
  deps: IdentityDeps,
  userId: string,
  reason: string,
): Promise<number> {
  const rows = await sql<{ id: string }>(
    em,
    `UPDATE sessions SET is_revoked = true, revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND NOT is_revoked RETURNING id`,
    [new Date(deps.clock.now()), reason, userId],
  );
  // An unused invitation or reset link must not bring a disabled account back.
  await cancelOneTimeTokens(em, deps, userId, 'invite');
  await cancelOneTimeTokens(em, deps, userId, 'reset');
  return rows.length;
}
