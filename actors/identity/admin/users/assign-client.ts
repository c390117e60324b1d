import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { conflictOnDuplicate, findClient, grantableRole, sql, type IdentityHandler } from '../common.ts';
import { assignmentAfterChange } from './assignments.ts';
import { recordAssignment } from './audit.ts';
import { findUser } from './user-row.ts';

export const assignClient =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.clients.assign'> =>
  async ({ user_id, client_id, role_id }, { ctx }) => {
    requirePermission(ctx, 'users:write', client_id);
    const role = await deps.orm.em.fork().transactional(async (tx) => {
      await findUser(tx, user_id);
      await findClient(tx, client_id);
      const role = await grantableRole(tx, ctx, role_id, [client_id]);
      await conflictOnDuplicate('the user already has a role on this client; change it with PUT', () =>
        sql(tx, `INSERT INTO user_client_roles (user_id, client_id, role_id) VALUES (?, ?, ?)`, [
          user_id,
          client_id,
          role_id,
        ]),
      );
      return role;
    });
    await deps.access.invalidateUsers([user_id]);
    await recordAssignment(deps, ctx, 'user.client.assigned', user_id, client_id, { role_id, role_name: role.name });
    return assignmentAfterChange(deps.orm.em.fork(), ctx, user_id, client_id);
  };
