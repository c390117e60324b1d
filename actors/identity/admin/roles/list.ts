import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, type IdentityHandler } from '../common.ts';
import { COLUMNS, out, type RoleRow } from './role-row.ts';

export const listRoles =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.roles.list'> =>
  async (_input, { ctx }) => {
    requirePermission(ctx, 'roles:read');
    // System roles first in their fixed order (their ids sort that way), then custom roles by name.
    const rows = await sql<RoleRow>(
      deps.orm.em.fork(),
      `SELECT ${COLUMNS} FROM roles ORDER BY is_system DESC, CASE WHEN is_system THEN id::text END, lower(name) COLLATE "C", id`,
    );
    return rows.map(out);
  };
