import { requirePermission } from '../../../../contracts/access.ts';
import { USER_IMMUTABLE } from '../../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { refuseChanges } from '../../../../contracts/immutable.ts';
import type { IdentityDeps } from '../../deps.ts';
import { callerUserId, sql, type IdentityHandler } from '../common.ts';
import { recordUser } from './audit.ts';
import { detail } from './detail.ts';
import { guardTarget } from './guard-target.ts';
import { revokeAllSessions } from './revoke-sessions.ts';
import { findUser } from './user-row.ts';

export const updateUser =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.update'> =>
  async (input, { ctx }) => {
    requirePermission(ctx, 'users:write');
    const self = callerUserId(ctx);
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    let revoked = 0;
    await deps.orm.em.fork().transactional(async (tx) => {
      const user = await findUser(tx, input.id, true);
      await guardTarget(tx, ctx, user.id, 'users:write');
      refuseChanges(input, user, USER_IMMUTABLE);
      // `invited` only travels as the echo of an invited user's GET; an invitation is accepted, never set.
      if (input.status === 'invited' && user.status !== 'invited')
        throw new DomainError(
          'bad_request',
          `body.status: cannot be set to "invited" (it is ${JSON.stringify(user.status)}); a user becomes invited only when created or invited again`,
          {
            field: 'status',
          },
        );
      if (input.display_name !== undefined && input.display_name !== user.display_name)
        changes.display_name = { from: user.display_name, to: input.display_name };
      if (input.is_super_admin !== undefined && input.is_super_admin !== user.is_super_admin) {
        if (ctx.access?.super_admin !== true)
          throw new DomainError('forbidden', 'only a super admin may grant or revoke super admin');
        if (user.id === self) throw new DomainError('conflict', 'you cannot revoke your own super admin flag');
        changes.is_super_admin = { from: user.is_super_admin, to: input.is_super_admin };
      }
      if (input.status !== undefined && input.status !== user.status) {
        if (input.status === 'disabled' && user.id === self)
          throw new DomainError('conflict', 'you cannot disable your own account');
        if (input.status === 'active' && user.status === 'invited')
          throw new DomainError('conflict', 'an invited user becomes active by accepting the invitation');
        if (input.status === 'active' && !user.has_password && !user.auth_provider_id)
          throw new DomainError(
            'conflict',
            'this account has no password and no single sign-on link, so it cannot be activated; invite the user again instead',
          );
        changes.status = { from: user.status, to: input.status };
      }
      if (Object.keys(changes).length === 0) return;
      await sql(
        tx,
        `UPDATE users SET display_name = COALESCE(?, display_name), is_super_admin = COALESCE(?, is_super_admin), status = COALESCE(?, status), updated_at = now() WHERE id = ?`,
        [
          changes.display_name ? input.display_name : null,
          changes.is_super_admin ? input.is_super_admin : null,
          changes.status ? input.status : null,
          input.id,
        ],
      );
      if (changes.status?.to === 'disabled') revoked = await revokeAllSessions(tx, deps, input.id, 'user_disabled');
    });
    if (changes.is_super_admin || changes.status) await deps.access.invalidateUsers([input.id]);
    if (Object.keys(changes).length > 0) {
      const disabled = changes.status?.to === 'disabled';
      await recordUser(deps, ctx, disabled ? 'user.disabled' : 'user.updated', input.id, {
        changes,
        ...(disabled ? { sessions_revoked: revoked } : {}),
      });
    }
    return detail(deps.orm.em.fork(), ctx, input.id);
  };
