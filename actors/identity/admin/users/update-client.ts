import { requirePermission } from '../../../../contracts/access.ts';
import { ASSIGNMENT_IMMUTABLE } from '../../../../contracts/domains/identity-admin.ts';
import { refuseChanges } from '../../../../contracts/immutable.ts';
import type { IdentityDeps } from '../../deps.ts';
import { changeRole, type IdentityHandler } from '../common.ts';
import { assignmentAfterChange } from './assignments.ts';
import { recordAssignment } from './audit.ts';

export const updateClient =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.clients.update'> =>
  async ({ user_id, client_id, role_id, sent }, { ctx }) => {
    requirePermission(ctx, 'users:write', client_id);
    const { role, previous } = await deps.orm.em.fork().transactional((tx) =>
      changeRole(
        tx,
        ctx,
        {
          table: 'user_client_roles',
          where: 'user_id = ? AND client_id = ?',
          params: [user_id, client_id],
          forUpdate: true,
          missing: 'the user has no direct assignment on this client',
        },
        role_id,
        [client_id],
        () => refuseChanges(sent, { client_id }, ASSIGNMENT_IMMUTABLE),
      ),
    );
    await deps.access.invalidateUsers([user_id]);
    await recordAssignment(deps, ctx, 'user.client.updated', user_id, client_id, {
      from_role_id: previous,
      to_role_id: role_id,
      role_name: role.name,
    });
    return assignmentAfterChange(deps.orm.em.fork(), ctx, user_id, client_id);
  };
