import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, type IdentityHandler } from '../common.ts';
import { recordAssignment } from './audit.ts';

export const removeClient =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.clients.remove'> =>
  async ({ user_id, client_id }, { ctx }) => {
    requirePermission(ctx, 'users:delete', client_id);
    const removed = await sql<{ role_id: string }>(
      deps.orm.em.fork(),
      `DELETE FROM user_client_roles WHERE user_id = ? AND client_id = ? RETURNING role_id`,
      [user_id, client_id],
    );
    if (removed.length === 0) throw new DomainError('not_found', 'the user has no direct assignment on this client');
    await deps.access.invalidateUsers([user_id]);
    await recordAssignment(deps, ctx, 'user.client.removed', user_id, client_id, { role_id: removed[0]?.role_id });
    return {};
  };
