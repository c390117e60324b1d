import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { callerUserId, sql, type IdentityHandler } from '../common.ts';
import { recordUser } from './audit.ts';
import { guardTarget } from './guard-target.ts';
import { revokeAllSessions } from './revoke-sessions.ts';
import { findUser } from './user-row.ts';

export const disableUser =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.disable'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'users:delete');
    if (id === callerUserId(ctx)) throw new DomainError('conflict', 'you cannot disable your own account');
    const result = await deps.orm.em.fork().transactional(async (tx) => {
      const user = await findUser(tx, id, true);
      await guardTarget(tx, ctx, id, 'users:delete');
      if (user.status !== 'disabled')
        await sql(tx, `UPDATE users SET status = 'disabled', updated_at = now() WHERE id = ?`, [id]);
      // Idempotent: sessions are revoked even when the account was already disabled.
      return { from: user.status, revoked: await revokeAllSessions(tx, deps, id, 'user_disabled') };
    });
    await deps.access.invalidateUsers([id]);
    if (result.from !== 'disabled' || result.revoked > 0)
      await recordUser(deps, ctx, 'user.disabled', id, {
        previous_status: result.from,
        sessions_revoked: result.revoked,
      });
    return {};
  };
