import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../contracts/access.ts';
import type { Role } from '../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { IdentityDeps } from '../deps.ts';
import { ALL_PERMISSIONS, isKnownPermission } from '../permissions.ts';
import { toPgArray } from '../seed.ts';
import {
  assertCanGrant,
  canSee,
  conflictOnDuplicate,
  iso,
  requireOnEvery,
  sql,
  visibleClients,
  visibleServiceAccountsSql,
  visibleTeamsSql,
  visibleUsersSql,
  type IdentityHandlers,
  findById,
} from './common.ts';

interface RoleRow {
  id: string;
  name: string;
  description: string;
  permissions: string[];
  is_system: boolean;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `id, name, description, permissions, is_system, created_at, updated_at`;
const out = (r: RoleRow): Role => ({ ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) });

const findRoleRow = (em: EntityManager, id: string, lock = false): Promise<RoleRow> =>
  findById<RoleRow>(em, 'roles', COLUMNS, id, 'role', lock);

/** Deduplicated, registry-checked, in registry order; an unknown permission is a 400 naming it. */
function checkPermissions(permissions: readonly string[]): string[] {
  const unknown = [...new Set(permissions.filter((p) => !isKnownPermission(p)))];
  if (unknown.length > 0)
    throw new DomainError(
      'bad_request',
      `body.permissions: unknown permission${unknown.length > 1 ? 's' : ''} ${unknown.slice(0, 10).join(', ')}`,
    );
  const wanted = new Set(permissions);
  return ALL_PERMISSIONS.filter((p) => wanted.has(p));
}

const refuseSystem = (role: RoleRow, verb: string): void => {
  if (role.is_system) throw new DomainError('forbidden', `system roles cannot be ${verb}`);
};

const DUPLICATE_NAME = 'a role with this name already exists';

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

export function roleHandlers(deps: IdentityDeps): IdentityHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.identity.roles.list': async (_input, { ctx }) => {
      requirePermission(ctx, 'roles:read');
      // System roles first in their fixed order (their ids sort that way), then custom roles by name.
      const rows = await sql<RoleRow>(
        fork(),
        `SELECT ${COLUMNS} FROM roles ORDER BY is_system DESC, CASE WHEN is_system THEN id::text END, lower(name) COLLATE "C", id`,
      );
      return rows.map(out);
    },

    'svc.identity.roles.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'roles:read');
      return out(await findRoleRow(fork(), id));
    },

    'svc.identity.roles.create': async ({ name, description, permissions }, { ctx }) => {
      requirePermission(ctx, 'roles:write');
      const perms = checkPermissions(permissions);
      const id = randomUUID();
      const em = fork();
      // is_system is never taken from the request: every role created here is a custom role.
      await conflictOnDuplicate(DUPLICATE_NAME, () =>
        sql(
          em,
          `INSERT INTO roles (id, name, description, permissions, is_system) VALUES (?, ?, ?, ?::text[], false)`,
          [id, name, description, toPgArray(perms)],
        ),
      );
      await deps.audit.record(ctx, {
        action: 'role.created',
        resource_type: 'role',
        resource_id: id,
        // Roles are global (granted on any client): their entries name none.
        client_ids: [],
        details: { name, description, permissions: perms },
      });
      return out(await findRoleRow(em, id));
    },

    'svc.identity.roles.update': async (input, { ctx }) => {
      requirePermission(ctx, 'roles:write');
      const perms = input.permissions === undefined ? undefined : checkPermissions(input.permissions);
      const { before, changes } = await fork().transactional(async (tx) => {
        const before = await findRoleRow(tx, input.id, true);
        refuseSystem(before, 'modified');
        // Every holder feels the change: the caller needs roles:write wherever the role is in use.
        const reach = await clientsReachedBy(tx, input.id);
        requireOnEvery(ctx, 'roles:write', reach, 'this role');
        const changes: Record<string, unknown> = {};
        if (input.name !== undefined && input.name !== before.name)
          changes.name = { from: before.name, to: input.name };
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
        await deps.audit.record(ctx, {
          action: 'role.updated',
          resource_type: 'role',
          resource_id: input.id,
          client_ids: [],
          details: { name: before.name, changes },
        });
      return out(await findRoleRow(fork(), input.id));
    },

    'svc.identity.roles.delete': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'roles:delete');
      const role = await fork().transactional(async (tx) => {
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
      await deps.audit.record(ctx, {
        action: 'role.deleted',
        resource_type: 'role',
        resource_id: id,
        client_ids: [],
        details: { name: role.name, permissions: role.permissions },
      });
      return {};
    },

    'svc.identity.roles.usage': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'roles:read');
      const em = fork();
      await findRoleRow(em, id);
      const visible = visibleClients(ctx, ['roles:read']);
      const users = (
        await sql<{
          user_id: string;
          email: string;
          display_name: string;
          client_id: string;
          client_name: string;
          client_slug: string;
        }>(
          em,
          `SELECT u.id AS user_id, u.email, u.display_name, c.id AS client_id, c.name AS client_name, c.slug AS client_slug
             FROM user_client_roles ucr JOIN users u ON u.id = ucr.user_id JOIN clients c ON c.id = ucr.client_id
            WHERE ucr.role_id = ? ORDER BY lower(u.email), lower(c.name)`,
          [id],
        )
      ).filter((u) => canSee(visible, u.client_id));
      // Teams and members, and keys, as the teams and service-account views would show them to the caller.
      const visibleTeams = visibleTeamsSql(visible, 't');
      const visibleMembers = visibleUsersSql(visible, 'u');
      const memberships = await sql<{
        team_id: string;
        team_name: string;
        user_id: string;
        email: string;
        display_name: string;
      }>(
        em,
        `SELECT t.id AS team_id, t.name AS team_name, u.id AS user_id, u.email, u.display_name
           FROM team_members tm JOIN teams t ON t.id = tm.team_id JOIN users u ON u.id = tm.user_id
          WHERE tm.role_id = ? AND ${visibleTeams.where} AND ${visibleMembers.where}
          ORDER BY lower(t.name), t.id, lower(u.email)`,
        [id, ...visibleTeams.params, ...visibleMembers.params],
      );
      const teams = new Map<
        string,
        { team_id: string; team_name: string; members: { user_id: string; email: string; display_name: string }[] }
      >();
      for (const m of memberships) {
        const team = teams.get(m.team_id) ?? { team_id: m.team_id, team_name: m.team_name, members: [] };
        team.members.push({ user_id: m.user_id, email: m.email, display_name: m.display_name });
        teams.set(m.team_id, team);
      }
      const visibleKeys = visibleServiceAccountsSql(visible, 'sa');
      const service_accounts = await sql<{ id: string; name: string; is_active: boolean }>(
        em,
        `SELECT sa.id, sa.name, sa.is_active FROM service_accounts sa WHERE sa.role_id = ? AND ${visibleKeys.where}
          ORDER BY lower(sa.name), sa.id`,
        [id, ...visibleKeys.params],
      );
      return { role_id: id, users, teams: [...teams.values()], service_accounts };
    },

    'svc.identity.permissions.list': async (_input, { ctx }) => {
      if (ctx.principal.kind === 'anonymous') throw new DomainError('unauthorized', 'missing credentials');
      return [...ALL_PERMISSIONS];
    },
  };
}
