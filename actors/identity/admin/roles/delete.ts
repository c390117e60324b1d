import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, type IdentityHandler } from '../common.ts';
import { recordRole } from './audit.ts';
import { findRoleRow, refuseSystem } from './role-row.ts';

export const deleteRole =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.roles.delete'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'roles:delete');
    const role = await deps.orm.em.fork().transactional(async (tx) => {
      const role = await findRoleRow(tx, id, true);
      refuseSystem(role, 'deleted');
      const [use] = await sql<{ assignments: number; memberships: number; service_accounts: number }>(
        tx,
        `SELECT (SELECT count(*)::int FROM user_client_roles WHERE role_id = ?) AS assignments,
                  (SELECT count(*)::int FROM team_members WHERE role_id = ?) AS memberships,
                  (SELECT count(*)::int FROM service_accounts WHERE role_id = ?) AS service_accounts`,
        [id, id, id],
      );
      if (use && use.assignments + use.memberships + use.service_accounts > 0)
        throw new DomainError(
          'conflict',
          `role is still in use (${use.assignments} direct assignments, ${use.memberships} team memberships, ${use.service_accounts} service accounts); see GET /api/v1/roles/${id}/usage`,
        );
      await sql(tx, `DELETE FROM roles WHERE id = ?`, [id]);
      return role;
    });
    await recordRole(deps, ctx, 'role.deleted', id, { name: role.name, permissions: role.permissions });
    return {};
  };
