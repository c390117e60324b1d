import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import { clientsOfUser, requireOnEvery } from '../common.ts';

/**
 * Acting on a user's account (rename, status, invitation, password reset) needs `permission` on every client the user
 * reaches, and a super admin's account is reachable by super admins only: an administrator of client A cannot
 * disable or take over the accounts of client B.
 */
export async function guardTarget(
  em: EntityManager,
  ctx: CallerContext,
  userId: string,
  permission: string,
): Promise<void> {
  requireOnEvery(ctx, permission, await clientsOfUser(em, userId), 'this user');
}
