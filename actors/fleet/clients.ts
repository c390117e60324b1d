import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { clientsWith, requirePermission } from '../../contracts/access.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { CLIENT_IMMUTABLE, type Client } from '../../contracts/domains/fleet.ts';
import { DomainError } from '../../contracts/errors.ts';
import { refuseChanges } from '../../contracts/immutable.ts';
import { conflictOnDuplicate, iso, pageOf, sql } from '../../platform/stores/sql.ts';
import { revokeAgents } from './agents/revocation.ts';
import type { FleetDeps, FleetHandlers } from './deps.ts';
import { loadClient } from './scope.ts';

interface ClientRow {
  id: string;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
}

const out = (c: ClientRow): Client => ({
  id: c.id,
  name: c.name,
  slug: c.slug,
  created_at: iso(c.created_at),
  updated_at: iso(c.updated_at),
});
const COLUMNS = 'id, name, slug, created_at, updated_at';

/** A client the caller may act on with `permission`: 404 out of reach, 403 in reach without it. */
const reachable = (
  em: EntityManager,
  ctx: CallerContext,
  id: string,
  permission: string,
  lock = false,
): Promise<ClientRow> => loadClient<ClientRow>(em, ctx, id, permission, COLUMNS, lock);

const SORT: Record<'name' | 'slug' | 'created_at' | 'updated_at', string> = {
  name: 'lower(name)',
  slug: 'slug',
  created_at: 'created_at',
  updated_at: 'updated_at',
};

export function clientHandlers(deps: FleetDeps): FleetHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.fleet.clients.list': async ({ page, per_page, sort, order }, { ctx }) => {
      requirePermission(ctx, 'clients:read');
      // Super admins and all-client grants see every client; everyone else the clients they hold clients:read on.
      const scope = clientsWith(ctx, 'clients:read');
      if (scope !== 'all' && scope.length === 0) return { items: [], total: 0, page, per_page };
      const dir = order === 'desc' ? 'DESC' : 'ASC';
      return pageOf(
        fork(),
        {
          columns: COLUMNS,
          from: scope === 'all' ? 'clients' : 'clients WHERE id IN (?)',
          params: scope === 'all' ? [] : [scope],
          order: `${SORT[sort]} ${dir}, id ${dir}`,
        },
        { page, per_page },
        (rows: ClientRow[]) => rows.map(out),
      );
    },

    'svc.fleet.clients.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'clients:read');
      return out(await reachable(fork(), ctx, id, 'clients:read'));
    },

    'svc.fleet.clients.create': async ({ name, slug }, { ctx }) => {
      // clients:write held on any client allows creating one; the creator gets no access to it implicitly.
      requirePermission(ctx, 'clients:write');
      const id = randomUUID();
      const em = fork();
      await conflictOnDuplicate('a client with this slug already exists', () =>
        sql(em, `INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [id, name, slug]),
      );
      await deps.audit.record(ctx, {
        action: 'client.created',
        resource_type: 'client',
        resource_id: id,
        client_ids: [id],
        details: { name, slug },
      });
      const [row] = await sql<ClientRow>(em, `SELECT ${COLUMNS} FROM clients WHERE id = ?`, [id]);
      if (!row) throw new DomainError('not_found', 'client not found');
      return out(row);
    },

    'svc.fleet.clients.update': async ({ id, name, ...fixed }, { ctx }) => {
      requirePermission(ctx, 'clients:write');
      const em = fork();
      const before = await reachable(em, ctx, id, 'clients:write');
      refuseChanges(fixed, before, CLIENT_IMMUTABLE);
      if (before.name === name) return out(before);
      const [row] = await sql<ClientRow>(
        em,
        `UPDATE clients SET name = ?, updated_at = now() WHERE id = ? RETURNING ${COLUMNS}`,
        [name, id],
      );
      if (!row) throw new DomainError('not_found', 'client not found');
      await deps.audit.record(ctx, {
        action: 'client.updated',
        resource_type: 'client',
        resource_id: id,
        client_ids: [id],
        details: { changes: { name: { from: before.name, to: name } } },
      });
      return out(row);
    },

    'svc.fleet.clients.delete': async ({ id }, { ctx, call }) => {
      requirePermission(ctx, 'clients:delete');
      await reachable(fork(), ctx, id, 'clients:delete');
      // Identity drops the grants that go through this client and the affected users' cached access first (its
      // tables are its own); the foreign-key cascade below stays as a backstop.
      const { affected_users } = await call('svc.identity.access.client_removed', { client_id: id });
      const { client, agents } = await fork().transactional(async (tx) => {
        const client = await reachable(tx, ctx, id, 'clients:delete', true);
        // The agents' rows go with the client: their broker credentials are revoked before it commits.
        const agents = await revokeAgents(tx, deps.revoker, { sql: 'client_id = ?', params: [id] });
        await sql(tx, `DELETE FROM clients WHERE id = ?`, [id]);
        return { client, agents };
      });
      // Its hosts went with it (cascade).
      deps.hostScopes?.forgetAll();
      await deps.audit.record(ctx, {
        action: 'client.deleted',
        resource_type: 'client',
        resource_id: id,
        client_ids: [id],
        details: {
          name: client.name,
          slug: client.slug,
          affected_users,
          revoked_agents: agents.filter((a) => a.previous === 'active').length,
        },
      });
      return {};
    },
  };
}
