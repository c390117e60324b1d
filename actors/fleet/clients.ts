import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { clientsWith, requirePermission } from '../../contracts/access.ts';
import type { Cat } from '../../contracts/catalogue.ts';
import type { CallerContext } from '../../contracts/context.ts';
import type { Client } from '../../contracts/domains/fleet.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { AccessResolver } from '../identity/access.ts';
import type { AuditRecorder } from '../runtime/audit.ts';
import { conflictOnDuplicate, iso, pageOf, sql } from '../runtime/stores/sql.ts';
import type { Handlers } from '../runtime/serve.ts';
import { requireOnClient } from './scope.ts';

export interface FleetDeps {
  orm: MikroORM;
  access: AccessResolver;
  audit: AuditRecorder;
}

interface ClientRow {
  id: string;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
}

const out = (c: ClientRow): Client => ({ id: c.id, name: c.name, slug: c.slug, created_at: iso(c.created_at), updated_at: iso(c.updated_at) });
const COLUMNS = 'id, name, slug, created_at, updated_at';

/** A client the caller may act on with `permission`: 404 out of reach, 403 in reach without it. */
async function reachable(em: EntityManager, ctx: CallerContext, id: string, permission: string): Promise<ClientRow> {
  requireOnClient(ctx, id, permission, 'client');
  const [row] = await sql<ClientRow>(em, `SELECT ${COLUMNS} FROM clients WHERE id = ?`, [id]);
  if (!row) throw new DomainError('not_found', 'client not found');
  return row;
}

const SORT: Record<'name' | 'slug' | 'created_at' | 'updated_at', string> = { name: 'lower(name)', slug: 'slug', created_at: 'created_at', updated_at: 'updated_at' };

export function clientHandlers(deps: FleetDeps): Handlers<Cat, 'fleet'> {
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
        { columns: COLUMNS, from: scope === 'all' ? 'clients' : 'clients WHERE id IN (?)', params: scope === 'all' ? [] : [scope], order: `${SORT[sort]} ${dir}, id ${dir}` },
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
      await conflictOnDuplicate('a client with this slug already exists', () => sql(em, `INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [id, name, slug]));
      await deps.audit.record(ctx, { action: 'client.created', resource_type: 'client', resource_id: id, details: { name, slug } });
      const [row] = await sql<ClientRow>(em, `SELECT ${COLUMNS} FROM clients WHERE id = ?`, [id]);
      if (!row) throw new DomainError('not_found', 'client not found');
      return out(row);
    },

    'svc.fleet.clients.update': async ({ id, name }, { ctx }) => {
      requirePermission(ctx, 'clients:write');
      const em = fork();
      const before = await reachable(em, ctx, id, 'clients:write');
      if (before.name === name) return out(before);
      const [row] = await sql<ClientRow>(em, `UPDATE clients SET name = ?, updated_at = now() WHERE id = ? RETURNING ${COLUMNS}`, [name, id]);
      if (!row) throw new DomainError('not_found', 'client not found');
      await deps.audit.record(ctx, { action: 'client.updated', resource_type: 'client', resource_id: id, details: { changes: { name: { from: before.name, to: name } } } });
      return out(row);
    },

    'svc.fleet.clients.delete': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'clients:delete');
      const { client, users } = await fork().transactional(async (tx) => {
        const client = await reachable(tx, ctx, id, 'clients:delete');
        // Whose access goes through this client, read before the cascade removes the links.
        const users = await sql<{ user_id: string }>(
          tx,
          `SELECT tm.user_id FROM team_members tm JOIN team_clients tc ON tc.team_id = tm.team_id WHERE tc.client_id = ?
           UNION SELECT user_id FROM user_client_roles WHERE client_id = ?`,
          [id, id],
        );
        await sql(tx, `DELETE FROM clients WHERE id = ?`, [id]);
        return { client, users: users.map((u) => u.user_id) };
      });
      // After the commit, so no request can re-cache the old access in between.
      await deps.access.invalidateUsers(users);
      await deps.audit.record(ctx, { action: 'client.deleted', resource_type: 'client', resource_id: id, details: { name: client.name, slug: client.slug, affected_users: users.length } });
      return {};
    },
  };
}
