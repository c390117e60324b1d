import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../../contracts/errors.ts';
import type { IdentityDeps } from '../deps.ts';
import { ALL_PERMISSIONS } from '../permissions.ts';
import {
  canSee,
  findClient,
  requireAny,
  requireVisibleUser,
  sql,
  visibleClients,
  type IdentityHandlers,
} from './common.ts';

/**
 * Who reaches what, and why: every grant (a direct assignment, or a team membership applied to the team's clients)
 * with its role and that role's permissions, plus the merged permissions per client — the same union the access
 * resolver computes.
 */

interface GrantRow {
  source: 'direct' | 'team';
  team_id: string | null;
  team_name: string | null;
  role_id: string;
  role_name: string;
  permissions: string[];
}

const grantOut = (g: GrantRow) => ({
  source: g.source,
  team_id: g.team_id,
  team_name: g.team_name,
  role_id: g.role_id,
  role_name: g.role_name,
  permissions: g.permissions,
});

/** Union of the grants' permissions, in registry order. */
const merged = (grants: readonly GrantRow[]): string[] => {
  const set = new Set(grants.flatMap((g) => g.permissions));
  return ALL_PERMISSIONS.filter((p) => set.has(p));
};

function groupBy<T, K>(rows: readonly T[], key: (row: T) => K): Map<K, T[]> {
  const map = new Map<K, T[]>();
  for (const row of rows) {
    const list = map.get(key(row)) ?? [];
    list.push(row);
    map.set(key(row), list);
  }
  return map;
}

export function accessAuditHandlers(deps: IdentityDeps): IdentityHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.identity.access_audit.by_user': async ({ user_id }, { ctx }) => {
      requireAny(ctx, ['roles:read', 'users:read']);
      const em = fork();
      // A caller scoped to some clients sees the user's access on those clients only, and no user it could not see.
      const visible = visibleClients(ctx, ['roles:read', 'users:read']);
      await requireVisibleUser(em, visible, user_id);
      const [user] = await sql<{
        id: string;
        email: string;
        display_name: string;
        status: 'invited' | 'active' | 'disabled';
        is_super_admin: boolean;
      }>(em, `SELECT id, email, display_name, status, is_super_admin FROM users WHERE id = ?`, [user_id]);
      if (!user) throw new DomainError('not_found', 'user not found');
      const rows = await sql<GrantRow & { client_id: string; client_name: string; client_slug: string }>(
        em,
        `SELECT 'direct' AS source, NULL::uuid AS team_id, NULL::text AS team_name, c.id AS client_id, c.name AS client_name, c.slug AS client_slug,
                r.id AS role_id, r.name AS role_name, r.permissions
           FROM user_client_roles ucr JOIN clients c ON c.id = ucr.client_id JOIN roles r ON r.id = ucr.role_id
          WHERE ucr.user_id = ?
         UNION ALL
         SELECT 'team', t.id, t.name, c.id, c.name, c.slug, r.id, r.name, r.permissions
           FROM team_members tm JOIN teams t ON t.id = tm.team_id JOIN team_clients tc ON tc.team_id = tm.team_id
           JOIN clients c ON c.id = tc.client_id JOIN roles r ON r.id = tm.role_id
          WHERE tm.user_id = ?
          ORDER BY client_name, client_id, source, team_name`,
        [user_id, user_id],
      );
      const clients = [
        ...groupBy(
          rows.filter((r) => canSee(visible, r.client_id)),
          (r) => r.client_id,
        ).values(),
      ].map((grants) => {
        const first = grants[0]!;
        return {
          client_id: first.client_id,
          client_name: first.client_name,
          client_slug: first.client_slug,
          permissions: merged(grants),
          grants: grants.map(grantOut),
        };
      });
      return { user, clients };
    },

    'svc.identity.access_audit.by_client': async ({ client_id }, { ctx }) => {
      requireAny(ctx, ['roles:read', 'clients:read'], client_id);
      const em = fork();
      const client = await findClient(em, client_id);
      const rows = await sql<
        GrantRow & { user_id: string; email: string; display_name: string; status: 'invited' | 'active' | 'disabled' }
      >(
        em,
        `SELECT 'direct' AS source, NULL::uuid AS team_id, NULL::text AS team_name, u.id AS user_id, u.email, u.display_name, u.status,
                r.id AS role_id, r.name AS role_name, r.permissions
           FROM user_client_roles ucr JOIN users u ON u.id = ucr.user_id JOIN roles r ON r.id = ucr.role_id
          WHERE ucr.client_id = ?
         UNION ALL
         SELECT 'team', t.id, t.name, u.id, u.email, u.display_name, u.status, r.id, r.name, r.permissions
           FROM team_clients tc JOIN team_members tm ON tm.team_id = tc.team_id JOIN teams t ON t.id = tc.team_id
           JOIN users u ON u.id = tm.user_id JOIN roles r ON r.id = tm.role_id
          WHERE tc.client_id = ?
          ORDER BY email, user_id, source, team_name`,
        [client_id, client_id],
      );
      const users = [...groupBy(rows, (r) => r.user_id).values()].map((grants) => {
        const first = grants[0]!;
        return {
          user_id: first.user_id,
          email: first.email,
          display_name: first.display_name,
          status: first.status,
          permissions: merged(grants),
          grants: grants.map(grantOut),
        };
      });
      const service_accounts = await sql<{
        id: string;
        name: string;
        is_active: boolean;
        all_clients: boolean;
        role_id: string;
        role_name: string;
        permissions: string[];
      }>(
        em,
        `SELECT sa.id, sa.name, sa.is_active, ('*' = ANY(sa.client_scope)) AS all_clients, r.id AS role_id, r.name AS role_name, r.permissions
           FROM service_accounts sa JOIN roles r ON r.id = sa.role_id
          WHERE '*' = ANY(sa.client_scope) OR ? = ANY(sa.client_scope)
          ORDER BY lower(sa.name), sa.id`,
        [client_id],
      );
      return { client: { id: client.id, name: client.name, slug: client.slug }, users, service_accounts };
    },
  };
}
