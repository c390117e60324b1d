import type { MikroORM } from '@mikro-orm/postgresql';
import { clientsWith, requirePermission } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type { SearchHit } from '../../../contracts/domains/fleet-search.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { iso, offsetOf } from '../../../platform/stores/sql.ts';
import type { FleetHandlers } from '../deps.ts';
import { compileWhere, Params, recordCountSql } from './compile.ts';
import { fieldList, hostField, HOST_FIELD_NAMES, type FieldDef } from './fields.ts';
import { PqlError, tokenize } from './lexer.ts';
import { parsePql, pqlError, type Expr } from './parser.ts';
import { readOnlySearch, type BoundQuery } from './run.ts';

export interface SearchDeps {
  orm: MikroORM;
  /** SVC_SEARCH_TIMEOUT_MS: the longest a search statement may run. */
  timeoutMs: number;
}

/** A reply must fit a NATS message (8 MB on our servers) with room to spare: hosts with many long tags could exceed it. */
const MAX_REPLY_BYTES = 6 * 1024 * 1024;
/** Hostname, case-insensitive, then exact, then id: the order of the search index (Migration0009). */
const HOST_ORDER = 'lower(h.hostname) COLLATE "C", h.hostname COLLATE "C", h.id';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Clients whose hosts a search may return: the caller needs hosts:read (to see hosts) and search:read (to search) on
 * the client. `'all'` for super admins and all-client grants of both.
 */
export function searchScope(ctx: CallerContext): 'all' | string[] {
  const hosts = clientsWith(ctx, 'hosts:read');
  const search = clientsWith(ctx, 'search:read');
  if (hosts === 'all' && search === 'all') return 'all';
  const both =
    hosts === 'all' ? (search as string[]) : search === 'all' ? hosts : hosts.filter((id) => search.includes(id));
  return both.filter((id) => UUID.test(id));
}

function parseOr400(q: string): Expr {
  try {
    return parsePql(q);
  } catch (err) {
    if (err instanceof PqlError) throw new DomainError('bad_request', err.message);
    throw err;
  }
}

/**
 * The compiled condition on `hosts h`, tenant filter first, and the statement that counts its hosts; null when the
 * caller reaches no client (nothing matches).
 */
function compiled(
  ctx: CallerContext,
  q: string,
): { where: string; params: Params; count: { sql: string; params: Params } } | null {
  requirePermission(ctx, 'search:read');
  // Parsed before the scope is looked at: an invalid query is a 400 whatever the caller may reach.
  const expr = parseOr400(q);
  const scope = searchScope(ctx);
  if (scope !== 'all' && scope.length === 0) return null;
  const params = new Params();
  const tenant = scope === 'all' ? 'TRUE' : `h.client_id = ANY(${params.add(scope)}::uuid[])`;
  const where = `${tenant} AND ${compileWhere(expr, params)}`;
  const recordParams = new Params();
  const recordCount = recordCountSql(expr, recordParams, scope === 'all' ? undefined : scope);
  const count = recordCount
    ? { sql: recordCount, params: recordParams }
    : { sql: `SELECT count(*)::int AS n FROM hosts h WHERE ${where}`, params };
  return { where, params, count };
}

interface HitRow {
  id: string;
  hostname: string;
  ip_address: string;
  os: string;
  arch: string;
  agent_status: 'online' | 'offline';
  tags: Record<string, string>;
}

/** `host.os`, `os`, `tag.env` or `label.app`: the value expression a group is formed on, and how values leave. */
function groupKey(
  groupBy: string,
  params: Params,
): { value: string; join: string; out: (v: unknown) => string | number | null } {
  const text = groupBy.trim();
  const keyed = /^(label|tag)\.(.+)$/.exec(text);
  if (keyed) {
    const key = keyed[2]!.startsWith('"') ? quotedKey(keyed[2]!) : keyed[2]!;
    return {
      value: `h.${keyed[1] === 'label' ? 'labels' : 'tags'} ->> ${params.add(key)}`,
      join: '',
      out: (v) => (v === null ? null : String(v)),
    };
  }
  const name = text.startsWith('host.') ? text.slice(5) : text;
  const def: FieldDef | undefined = hostField(name);
  if (!def)
    throw new DomainError(
      'bad_request',
      `group_by must be a host field (${HOST_FIELD_NAMES.map((n) => `host.${n}`).join(', ')}), label.<key> or tag.<key>`,
    );
  if (def.lookup)
    return { value: 'g.slug', join: `JOIN ${def.lookup.table} g ON g.id = h.${def.lookup.via}`, out: (v) => String(v) };
  const out =
    def.type === 'number'
      ? (v: unknown) => Number(v)
      : def.type === 'datetime'
        ? (v: unknown) => (v === null ? null : iso(v as Date | string))
        : (v: unknown) => String(v);
  return { value: `h.${def.column}`, join: '', out };
}

/** `"odd key"` in a group_by, with the query language's string escapes. */
function quotedKey(text: string): string {
  try {
    const [t, end] = tokenize(text);
    if (t?.kind === 'string' && end?.kind === 'eof') return t.value;
  } catch (err) {
    if (!(err instanceof PqlError)) throw err;
  }
  throw new DomainError('bad_request', 'group_by: a quoted label or tag name must be one double-quoted string');
}

export function searchHandlers(deps: SearchDeps): FleetHandlers {
  const run = <T>(work: (query: BoundQuery) => Promise<T>): Promise<T> =>
    readOnlySearch(deps.orm, deps.timeoutMs, work);

  return {
    'svc.fleet.search.hosts': async ({ q, page, per_page }, { ctx }) => {
      const c = compiled(ctx, q);
      if (!c) return { items: [], total: 0, page, per_page };
      const { total, rows } = await run(async (query) => {
        const [n] = await query<{ n: number }>(c.count.sql, c.count.params.values);
        const total = n?.n ?? 0;
        const offset = offsetOf(page, per_page);
        if (offset >= total) return { total, rows: [] };
        const limit = c.params.add(per_page);
        const skip = c.params.add(offset);
        const rows = await query<HitRow>(
          `SELECT h.id, h.hostname, h.ip_address, h.os, h.arch, h.agent_status, h.tags FROM hosts h WHERE ${c.where} ORDER BY ${HOST_ORDER} LIMIT ${limit} OFFSET ${skip}`,
          c.params.values,
        );
        return { total, rows };
      });
      const items: SearchHit[] = rows.map((r) => ({
        id: r.id,
        hostname: r.hostname,
        ip_address: r.ip_address,
        os: r.os,
        arch: r.arch,
        agent_status: r.agent_status,
        tags: r.tags,
      }));
      if (Buffer.byteLength(JSON.stringify(items)) > MAX_REPLY_BYTES) {
        throw new DomainError(
          'bad_request',
          `this page of results is larger than ${MAX_REPLY_BYTES / 1024 / 1024} MB (hosts with many long tags); ask for fewer hosts per page`,
        );
      }
      return { items, total, page, per_page };
    },

    'svc.fleet.search.count': async ({ q }, { ctx }) => {
      const c = compiled(ctx, q);
      if (!c) return { count: 0 };
      const [n] = await run((query) => query<{ n: number }>(c.count.sql, c.count.params.values));
      return { count: n?.n ?? 0 };
    },

    'svc.fleet.search.fields': async (_input, { ctx }) => {
      requirePermission(ctx, 'search:read');
      return fieldList();
    },

    'svc.fleet.search.validate': async ({ query }, { ctx }) => {
      requirePermission(ctx, 'search:read');
      const error = pqlError(query);
      return { valid: error === null, error: error ?? '' };
    },

    'svc.fleet.search.aggregate': async ({ q, group_by, limit }, { ctx }) => {
      const c = compiled(ctx, q);
      // The group is checked even when the caller reaches no client, so a bad request is a 400 for everyone.
      const key = groupKey(group_by, c?.params ?? new Params());
      if (!c) return [];
      const rows = await run((query) =>
        query<{ value: unknown; count: number }>(
          `SELECT ${key.value} AS value, count(*)::int AS count FROM hosts h ${key.join} WHERE ${c.where} GROUP BY 1 ORDER BY 2 DESC, 1 ASC NULLS LAST LIMIT ${c.params.add(limit)}`,
          c.params.values,
        ),
      );
      return rows.map((r) => ({ value: key.out(r.value), count: r.count }));
    },
  };
}
