import type { CallerContext } from '../../../../contracts/context.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sendInvitation, sendPasswordReset } from '../../email.ts';
import { createOneTimeToken } from '../../one-time-tokens.ts';
import { guardTarget } from './guard-target.ts';
import { findUser, type UserRow } from './user-row.ts';

/**
 * A new invitation (invited users) or reset link (active users) for a user within the caller's reach, replacing
 * older ones of the same kind, then the mail with it.
 */
export async function mailToken(
  deps: IdentityDeps,
  ctx: CallerContext,
  id: string,
  purpose: 'invite' | 'reset',
): Promise<UserRow> {
  const { user, token } = await deps.orm.em.fork().transactional(async (tx) => {
    const user = await findUser(tx, id, true);
    await guardTarget(tx, ctx, id, 'users:write');
    if (purpose === 'invite' && user.status !== 'invited')
      throw new DomainError('conflict', `only invited users can be re-invited; this user is ${user.status}`);
    if (purpose === 'reset' && user.status !== 'active')
      throw new DomainError('conflict', `only active users can reset a password; this user is ${user.status}`);
    return { user, token: await createOneTimeToken(tx, deps, id, purpose) };
  });
  await (purpose === 'invite' ? sendInvitation : sendPasswordReset)(deps, user, token);
  return user;
}
