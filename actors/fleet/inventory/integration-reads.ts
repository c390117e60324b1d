import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { clientsWith, requirePermission } from '../../../contracts/access.ts';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type { HostIntegration, IntegrationType } from '../../../contracts/domains/fleet-inventory.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { iso, sql } from '../../../platform/stores/sql.ts';
import { loadClient, loadHost } from '../scope.ts';

/**
 * Integration reads (docs/api/fleet.md#integrations), all under integrations:read. Counts, status summaries and
 * host lists cover only hosts of clients where the caller holds it. The catalogue's types are listed to everyone who
 * may read integrations; a type only an agent reported is listed where one of its hosts is in the caller's scope.
 */

const PERMISSION = 'integrations:read';

/** `hi.client_id` restricted to the caller's clients, as SQL and its parameters. */
function scopeOf(ctx: CallerContext): { cond: string; params: unknown[] } {
  const scope = clientsWith(ctx, PERMISSION);
  if (scope === 'all') return { cond: 'TRUE', params: [] };
  if (scope.length === 0) return { cond: 'FALSE', params: [] };
  return { cond: 'hi.client_id IN (?)', params: [scope] };
}

interface TypeRow {
  id: string;
  name: string;
  category: string;
  description: string;
  host_count: number;
  ok: number;
  warning: number;
  error: number;
  unknown: number;
}

const outType = (r: TypeRow): IntegrationType => ({
  id: r.id,
  name: r.name,
  category: r.category,
  description: r.description,
  host_count: r.host_count,
  status_summary: { ok: r.ok, warning: r.warning, error: r.error, unknown: r.unknown },
});

async function typesInScope(em: EntityManager, ctx: CallerContext, id?: string): Promise<IntegrationType[]> {
  const scope = scopeOf(ctx);
  const rows = await sql<TypeRow>(
    em,
    `SELECT i.id, i.name, i.category, i.description, count(hi.id)::int AS host_count,
            count(hi.id) FILTER (WHERE hi.status = 'ok')::int AS ok,
            count(hi.id) FILTER (WHERE hi.status = 'warning')::int AS warning,
            count(hi.id) FILTER (WHERE hi.status = 'error')::int AS error,
            count(hi.id) FILTER (WHERE hi.status = 'unknown')::int AS unknown
       FROM integrations i LEFT JOIN host_integrations hi ON hi.integration_id = i.id AND ${scope.cond}
      ${id === undefined ? '' : 'WHERE i.id = ?'}
      GROUP BY i.id
     HAVING i.origin = 'catalogue' OR count(hi.id) > 0
      ORDER BY lower(i.name), i.id`,
    [...scope.params, ...(id === undefined ? [] : [id])],
  );
  return rows.map(outType);
}

async function typeInScope(em: EntityManager, ctx: CallerContext, id: string): Promise<IntegrationType> {
  const [type] = await typesInScope(em, ctx, id);
  if (!type) throw new DomainError('not_found', 'integration not found');
  return type;
}

type RecordRow = Omit<HostIntegration, 'last_seen_at'> & { last_seen_at: string | Date };
const RECORD_COLUMNS =
  'hi.id, hi.host_id, hi.integration_id, hi.collector_name, hi.status, hi.status_message, hi.enabled, hi.config, h.hostname, hi.last_seen_at';

async function records(em: EntityManager, where: string, params: unknown[], order: string): Promise<HostIntegration[]> {
  const rows = await sql<RecordRow>(
    em,
    `SELECT ${RECORD_COLUMNS} FROM host_integrations hi JOIN hosts h ON h.id = hi.host_id WHERE ${where} ORDER BY ${order}`,
    params,
  );
  return rows.map((r) => ({ ...r, last_seen_at: iso(r.last_seen_at) }));
}

export function integrationHandlers(deps: { orm: MikroORM }): Handlers<SystemCatalogue, 'fleet'> {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.fleet.integrations.list': async (_input, { ctx }) => {
      requirePermission(ctx, PERMISSION);
      return typesInScope(fork(), ctx);
    },

    'svc.fleet.integrations.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, PERMISSION);
      return typeInScope(fork(), ctx, id);
    },

    'svc.fleet.integrations.hosts': async ({ id }, { ctx }) => {
      requirePermission(ctx, PERMISSION);
      const em = fork();
      await typeInScope(em, ctx, id);
      const scope = scopeOf(ctx);
      return records(
        em,
        `hi.integration_id = ? AND ${scope.cond}`,
        [id, ...scope.params],
        'lower(h.hostname), hi.host_id',
      );
    },

    'svc.fleet.integrations.of_host': async ({ id }, { ctx }) => {
      const em = fork();
      await loadHost(em, ctx, id, PERMISSION);
      return records(em, 'hi.host_id = ?', [id], 'hi.integration_id');
    },

    'svc.fleet.integrations.of_client': async ({ id }, { ctx }) => {
      const em = fork();
      await loadClient(em, ctx, id, PERMISSION);
      return records(em, 'hi.client_id = ?', [id], 'lower(h.hostname), hi.host_id, hi.integration_id');
    },
  };
}
