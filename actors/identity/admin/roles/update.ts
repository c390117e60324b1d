import type { EntityManager } from '@mikro-orm/postgresql';
import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { toPgArray } from '../../../../platform/stores/pg-values.ts';
import { assertCanGrant, conflictOnDuplicate, requireOnEvery, sql, type IdentityHandler } from '../common.ts';
import { recordRole } from './audit.ts';
import { checkPermissions } from './check-permissions.ts';
import { DUPLICATE_NAME, findRoleRow, out, refuseSystem } from './role-row.ts';

/** Clients a role currently grants access on ('all' when a service account holds it with scope ["*"]). */
async function clientsReachedBy(em: EntityManager, roleId: string): Promise<'all' | string[]> {
  const [star] = await sql<{ n: number }>(
    em,
    `SELECT count(*)::int AS n FROM service_accounts WHERE role_id = ? AND '*' = ANY(client_scope)`,
    [roleId],
  );
  if ((star?.n ?? 0) > 0) return 'all';
  const rows = await sql<{ client_id: string }>(
    em,
    `SELECT client_id::text FROM user_client_roles WHERE role_id = ?
     UNION SELECT tc.client_id::text FROM team_members tm JOIN team_clients tc ON tc.team_id = tm.team_id WHERE tm.role_id = ?
     UNION SELECT unnest(client_scope) FROM service_accounts WHERE role_id = ?`,
    [roleId, roleId, roleId],
  );
  return rows.map((r) => r.client_id);
}

export const updateRole =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.roles.update'> =>
  async (input, { ctx }) => {
    requirePermission(ctx, 'roles:write');
    const perms = input.permissions === undefined ? undefined : checkPermissions(input.permissions);
    const { before, changes } = await deps.orm.em.fork().transactional(async (tx) => {
      const before = await findRoleRow(tx, input.id, true);
      refuseSystem(before, 'modified');
      // Every holder feels the change: the caller needs roles:write wherever the role is in use.
      const reach = await clientsReachedBy(tx, input.id);
      requireOnEvery(ctx, 'roles:write', reach, 'this role');
      const changes: Record<string, unknown> = {};
      if (input.name !== undefined && input.name !== before.name) changes.name = { from: before.name, to: input.name };
      if (input.description !== undefined && input.description !== before.description)
        changes.description = { from: before.description, to: input.description };
      if (perms !== undefined) {
        const added = perms.filter((p) => !before.permissions.includes(p));
        const removed = before.permissions.filter((p) => !perms.includes(p));
        if (added.length > 0 || removed.length > 0) {
          // Adding permissions grants them to every holder: the caller must hold them wherever the role reaches.
          if (added.length > 0) assertCanGrant(ctx, added, reach);
          changes.permissions = { before: before.permissions, after: perms, added, removed };
        }
      }
      if (Object.keys(changes).length > 0)
        await conflictOnDuplicate(DUPLICATE_NAME, () =>
          sql(
            tx,
            `UPDATE roles SET name = COALESCE(?, name), description = COALESCE(?, description), permissions = COALESCE(?::text[], permissions), updated_at = now() WHERE id = ?`,
            [
              changes.name ? input.name : null,
              changes.description ? input.description : null,
              changes.permissions && perms ? toPgArray(perms) : null,
              input.id,
            ],
          ),
        );
      return { before, changes };
    });
    if (changes.permissions) await deps.access.invalidateRole(input.id);
    if (Object.keys(changes).length > 0)
      await recordRole(deps, ctx, 'role.updated', input.id, { name: before.name, changes });
    return out(await findRoleRow(deps.orm.em.fork(), input.id));
  };
