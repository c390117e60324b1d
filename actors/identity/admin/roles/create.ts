import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { toPgArray } from '../../../../platform/stores/pg-values.ts';
import { conflictOnDuplicate, sql, type IdentityHandler } from '../common.ts';
import { recordRole } from './audit.ts';
import { checkPermissions } from './check-permissions.ts';
import { DUPLICATE_NAME, findRoleRow, out } from './role-row.ts';

export const createRole =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.roles.create'> =>
  async ({ name, description, permissions }, { ctx }) => {
    requirePermission(ctx, 'roles:write');
    const perms = checkPermissions(permissions);
    const id = randomUUID();
    const em = deps.orm.em.fork();
    // is_system is never taken from the request: every role created here is a custom role.
    await conflictOnDuplicate(DUPLICATE_NAME, () =>
      sql(em, `INSERT INTO roles (id, name, description, permissions, is_system) VALUES (?, ?, ?, ?::text[], false)`, [
        id,
        name,
        description,
        toPgArray(perms),
      ]),
    );
    await recordRole(deps, ctx, 'role.created', id, { name, description, permissions: perms });
    return out(await findRoleRow(em, id));
  };
