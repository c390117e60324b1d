import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { requirePermission, requireUser } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { SAVED_SEARCH_IMMUTABLE, type SavedSearch } from '../../../contracts/domains/fleet-search.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import type { AuditRecorder } from '../../../platform/audit.ts';
import { iso, pageOf, sql } from '../../../platform/stores/sql.ts';
import type { FleetHandlers } from '../deps.ts';
import { pqlError } from './parser.ts';

/**
 * Saved searches (docs/api/search.md#saved-searches). A search belongs to the user who saved it. Shared ones are
 * visible to everyone who may search; private ones to their owner and super admins only (404 for anyone else). Only
 * the owner or a super admin changes or deletes one (403 for other readers of a shared one).
 */

interface Row {
  id: string;
  user_id: string;
  name: string;
  query: string;
  description: string;
  is_shared: boolean;
  created_at: string;
  updated_at: string;
}

const COLUMNS = 'id, user_id, name, query, description, is_shared, created_at, updated_at';
const out = (r: Row): SavedSearch => ({ ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) });

const userIdOf = (ctx: CallerContext): string | null => (ctx.principal.kind === 'user' ? ctx.principal.user_id : null);
const isSuperAdmin = (ctx: CallerContext): boolean => ctx.access?.super_admin === true;

/** The same text `POST /search/validate` answers, as a 400. */
function requireValidQuery(query: string): void {
  const error = pqlError(query);
  if (error !== null) throw new DomainError('bad_request', error);
}

/** A saved search the caller may see: 404 when it does not exist or is someone else's private one. */
async function visible(em: EntityManager, ctx: CallerContext, id: string): Promise<Row> {
  const [row] = await sql<Row>(em, `SELECT ${COLUMNS} FROM saved_searches WHERE id = ?`, [id]);
  if (!row || (!row.is_shared && row.user_id !== userIdOf(ctx) && !isSuperAdmin(ctx)))
    throw new DomainError('not_found', 'saved search not found');
  return row;
}

/** One the caller may change: visible (404), and theirs or the caller a super admin (403). */
async function owned(em: EntityManager, ctx: CallerContext, id: string): Promise<Row> {
  const row = await visible(em, ctx, id);
  if (row.user_id !== userIdOf(ctx) && !isSuperAdmin(ctx))
    throw new DomainError('forbidden', 'only its owner or a super admin may change a saved search');
  return row;
}

export function savedSearchHandlers(deps: { orm: MikroORM; audit: AuditRecorder }): FleetHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.fleet.saved_searches.list': async ({ page, per_page }, { ctx }) => {
      requirePermission(ctx, 'search:read');
      const me = userIdOf(ctx);
      // Service accounts own no searches: they see the shared ones.
      return pageOf(
        fork(),
        {
          columns: COLUMNS,
          from: me ? 'saved_searches WHERE is_shared OR user_id = ?' : 'saved_searches WHERE is_shared',
          params: me ? [me] : [],
          order: 'lower(name), id',
        },
        { page, per_page },
        (rows: Row[]) => rows.map(out),
      );
    },

    'svc.fleet.saved_searches.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'search:read');
      return out(await visible(fork(), ctx, id));
    },

    'svc.fleet.saved_searches.create': async ({ name, query, description, is_shared }, { ctx }) => {
      const user = requireUser(ctx);
      requirePermission(ctx, 'search:write');
      requireValidQuery(query);
      const id = randomUUID();
      const [row] = await sql<Row>(
        fork(),
        `INSERT INTO saved_searches (id, user_id, name, query, description, is_shared) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
        [id, user.user_id, name, query, description, is_shared],
      );
      await deps.audit.record(ctx, {
        action: 'saved_search.created',
        resource_type: 'saved_search',
        resource_id: id,
        // A user's search over every client in reach belongs to none: global.
        client_ids: [],
        details: { name, is_shared },
      });
      return out(row!);
    },

    'svc.fleet.saved_searches.update': async ({ id, name, query, description, is_shared, ...fixed }, { ctx }) => {
      requireUser(ctx);
      requirePermission(ctx, 'search:write');
      const em = fork();
      const before = await owned(em, ctx, id);
      refuseChanges(fixed, out(before), SAVED_SEARCH_IMMUTABLE);
      requireValidQuery(query);
      const [row] = await sql<Row>(
        em,
        `UPDATE saved_searches SET name = ?, query = ?, description = ?, is_shared = ?, updated_at = now() WHERE id = ? RETURNING ${COLUMNS}`,
        [name, query, description, is_shared, id],
      );
      if (!row) throw new DomainError('not_found', 'saved search not found');
      const changes = Object.fromEntries(
        (['name', 'query', 'description', 'is_shared'] as const)
          .filter((k) => before[k] !== row[k])
          .map((k) => [k, { from: before[k], to: row[k] }]),
      );
      await deps.audit.record(ctx, {
        action: 'saved_search.updated',
        resource_type: 'saved_search',
        resource_id: id,
        client_ids: [],
        details: { owner_id: row.user_id, changes },
      });
      return out(row);
    },

    'svc.fleet.saved_searches.delete': async ({ id }, { ctx }) => {
      requireUser(ctx);
      requirePermission(ctx, 'search:write');
      const em = fork();
      const row = await owned(em, ctx, id);
      await sql(em, `DELETE FROM saved_searches WHERE id = ?`, [id]);
      await deps.audit.record(ctx, {
        action: 'saved_search.deleted',
        resource_type: 'saved_search',
        resource_id: id,
        client_ids: [],
        details: { name: row.name, owner_id: row.user_id },
      });
      return {};
    },
  };
}
