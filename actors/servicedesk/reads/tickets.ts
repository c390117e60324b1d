import type { EntityManager } from '@mikro-orm/postgresql';
import { stringify } from 'csv-stringify/sync';
import type { z } from 'zod';
import type { KanbanBoard, SlaCycle, TicketDetail } from '../../../contracts/domains/servicedesk.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { jsonText } from '../../../platform/json-text.ts';
import { iso, isoOrNull, offsetOf, pageOf, sql } from '../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../deps.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { covers, mappingsFor, requireOrganizationFilter, requireOwnership, type MappingRow } from '../scope.ts';
import {
  PENDING_CREATES,
  ticketColumns,
  ticketJson,
  ticketOrder,
  ticketOut,
  ticketSource,
  ticketWhere,
  WITH_TRANSITIONS,
  type Filters,
  type TicketRow,
} from './query.ts';

export const KANBAN_LIMIT = 500;
export const EXPORT_LIMIT = 10_000;

const CATEGORIES = [
  { status_category: 'new', category: 'To Do' },
  { status_category: 'indeterminate', category: 'In Progress' },
  { status_category: 'done', category: 'Done' },
] as const;

const round2 = (n: number): number => Math.round(n * 100) / 100;
const HOUR = 3_600_000;
const DAY = 86_400_000;

const EMPTY_BOARD: z.input<typeof KanbanBoard> = {
  columns: CATEGORIES.map((c) => ({ ...c, count: 0, statuses: [] })),
  total: 0,
  shown: 0,
  limit: KANBAN_LIMIT,
  truncated: false,
};

/** A ticket of the board as JSON (ticketJson), with what places it. */
interface BoardRow {
  status_category: string;
  status: string;
  ticket: string;
}

/**
 * The board (KanbanBoard) as JSON text in parts: the three categories in order, each one's statuses by name, each
 * status's tickets in the board's order.
 */
function boardJson(rows: readonly BoardRow[], total: number): string[] {
  const parts = ['{"columns":['];
  CATEGORIES.forEach((c, i) => {
    const byStatus = new Map<string, string[]>();
    let count = 0;
    for (const r of rows) {
      if (r.status_category !== c.status_category) continue;
      const tickets = byStatus.get(r.status);
      if (tickets) tickets.push(r.ticket);
      else byStatus.set(r.status, [r.ticket]);
      count++;
    }
    parts.push(
      `${i > 0 ? ',' : ''}{"status_category":${JSON.stringify(c.status_category)},"category":${JSON.stringify(c.category)},"count":${count},"statuses":[`,
    );
    [...byStatus.keys()]
      .sort((a, b) => a.localeCompare(b))
      .forEach((status, j) => {
        const tickets = byStatus.get(status)!;
        parts.push(`${j > 0 ? ',' : ''}{"status":${JSON.stringify(status)},"count":${tickets.length},"tickets":[`);
        tickets.forEach((t, k) => {
          if (k > 0) parts.push(',');
          parts.push(t);
        });
        parts.push(']}');
      });
    parts.push(']}');
  });
  parts.push(`],"total":${total},"shown":${rows.length},"limit":${KANBAN_LIMIT},"truncated":${total > rows.length}}`);
  return parts;
}

/** The end of a due date (the day is the tracker's date, read as UTC). */
export const dueEnd = (due: string): number => Date.parse(`${due}T00:00:00.000Z`) + DAY;

/** A stored request or a pending create, located by its key or by the engineering key linked to it. */
interface Located {
  issue_key: string;
  project_key: string;
  organization_ids: string[];
  labels: string[];
  stored: boolean;
}

/**
 * Finds a request by key: a stored support request, the support request an engineering key is linked to, or a request
 * created through this service that the store has not caught up with.
 */
export async function locate(em: EntityManager, key: string): Promise<Located[]> {
  return sql<Located>(
    em,
    `SELECT issue_key, project_key, organization_ids, labels, true AS stored FROM sd_requests WHERE issue_key = ?
     UNION ALL
     (SELECT issue_key, project_key, organization_ids, labels, true AS stored FROM sd_requests WHERE linked_issue_key = ? ORDER BY updated_at DESC LIMIT 20)
     UNION ALL
     (SELECT issue_key, fields->>'project_key', ARRAY[organization_id], ARRAY(SELECT jsonb_array_elements_text(COALESCE(fields->'labels', '[]'::jsonb))), false
      FROM sd_pending WHERE kind = 'create' AND issue_key = ? LIMIT 1)`,
    [key, key, key],
  );
}

/**
 * The request a key names that the caller owns with `permission` (an engineering issue may be linked to several
 * support requests, of different organizations): undefined when the store knows none; 403 when the caller only
 * reaches them without the permission; 404 when it reaches none.
 */
export async function locateOwned(
  em: EntityManager,
  ctx: CallerContext,
  key: string,
  permission: string,
): Promise<{ found: Located; mapping: MappingRow } | undefined> {
  const candidates = await locate(em, key);
  if (candidates.length === 0) return undefined;
  let forbidden: DomainError | undefined;
  for (const found of candidates) {
    try {
      return { found, mapping: await requireOwnership(em, ctx, found, permission) };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      if (err.code === 'forbidden') forbidden ??= err;
      else if (err.code !== 'not_found') throw err;
    }
  }
  throw forbidden ?? new DomainError('not_found', `request ${key} not found`);
}

/**
 * The request a read of one request (detail, action log) is about: the caller needs servicedesk:read on it, a super
 * admin must name its organization (as on every read route), and a named organization narrows the look-up to it: 404
 * for an organization outside the caller's mappings or a request that is not in it.
 */
async function locateForRead(
  em: EntityManager,
  ctx: CallerContext,
  key: string,
  organizationId: string | undefined,
): Promise<Located> {
  requireOrganizationFilter(ctx, { organization_id: organizationId });
  if (!organizationId) {
    const owned = await locateOwned(em, ctx, key, 'servicedesk:read');
    if (!owned) throw new DomainError('not_found', `request ${key} not found`);
    return owned.found;
  }
  const mappings = await mappingsFor(em, ctx, 'servicedesk:read', { organization_id: organizationId });
  const candidates = await locate(em, key);
  const found = candidates.find((c) => mappings.some((m) => covers(m, c)));
  if (found) return found;
  // Reached only without the permission: 403, as without the filter; otherwise not in that organization for the caller.
  if (candidates.length > 0) await locateOwned(em, ctx, key, 'servicedesk:read');
  throw new DomainError('not_found', `request ${key} not found in organization ${organizationId}`);
}

interface DerivedRow {
  created_at: string;
  started_at: string | null;
  resolved_at: string | null;
  due_date: string | null;
  first_response_ms: string | number | null;
  first_response_breached: boolean | null;
  resolution_breached: boolean | null;
  resolution_sla_status: string;
  sla: SlaCycle[];
}

/** SLA and delivery figures of one request (contracts: TicketDetail). */
export function slaAndDelivery(d: DerivedRow, now: number): Pick<z.output<typeof TicketDetail>, 'sla' | 'delivery'> {
  const created = Date.parse(iso(d.created_at));
  const started = d.started_at ? Date.parse(iso(d.started_at)) : created;
  const resolved = d.resolved_at ? Date.parse(iso(d.resolved_at)) : null;
  const ended = resolved ?? now;
  const frMs = d.first_response_ms === null ? null : Number(d.first_response_ms);
  const onTime = d.due_date ? ended <= dueEnd(d.due_date) : d.resolution_breached !== true;
  return {
    sla: {
      first_response_sla_met: frMs !== null && d.first_response_breached === false ? 1 : 0,
      first_response_hours: frMs === null ? null : round2(frMs / HOUR),
      resolution_sla_status: d.resolution_sla_status,
      resolution_hours: resolved === null ? null : round2((resolved - created) / HOUR),
      cycles: d.sla,
    },
    delivery: {
      started_at: new Date(started).toISOString(),
      resolved_at: resolved === null ? null : new Date(resolved).toISOString(),
      due_date: d.due_date,
      cycle_time_days: round2(Math.max(0, ended - started) / DAY),
      is_on_time: onTime ? 1 : 0,
    },
  };
}

/** Cells a spreadsheet would run as a formula get a leading apostrophe (CSV injection). */
export function neutralize(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
}

const CSV_HEADER = [
  'issue_key',
  'summary',
  'status',
  'status_category',
  'priority',
  'issue_type',
  'assignee',
  'reporter_email',
  'organization_ids',
  'labels',
  'linked_issue_key',
  'created',
  'updated',
  'resolved',
  'due_date',
];

export function ticketHandlers(deps: SdDeps): SdHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  /** The caller's mappings for a read, and where/how tickets are read under the filters. */
  const prepare = async (em: EntityManager, f: Filters, ctx: Parameters<typeof ticketWhere>[2]) => {
    requireOrganizationFilter(ctx, f);
    const mappings = await mappingsFor(em, ctx, 'servicedesk:read', f, { withPending: true });
    if (mappings.length === 0) return undefined;
    const source = ticketSource(mappings);
    const where = ticketWhere(mappings, f, ctx);
    // With no pending writes to merge, only grouped columns filtered: the maintained totals hold the count; only the
    // scope and a search: the narrow search copy is counted instead of the requests themselves.
    const stored = source.pending === 'false';
    const counted =
      stored && where.totals
        ? `SELECT COALESCE(sum(v.requests), 0)::int AS n FROM sd_request_totals v WHERE ${where.sql}`
        : stored && where.searchCopy
          ? `SELECT count(*)::int AS n FROM sd_request_search v WHERE ${where.sql}`
          : `SELECT count(*)::int AS n FROM ${source.from} WHERE ${where.sql}`;
    return {
      from: `${source.from} WHERE ${where.sql}`,
      params: where.params,
      columns: ticketColumns(source.pending),
      pending: source.pending,
      order: ticketOrder(f),
      counted,
    };
  };

  /** How many requests match: memoized per store generation (the store changes only when synced or written through). */
  const count = (p: { counted: string; params: unknown[] }): Promise<number> =>
    deps.memo.memo(
      'count',
      p.counted,
      p.params,
      async () => (await sql<{ n: number }>(fork(), p.counted, p.params))[0]?.n ?? 0,
    );

  return {
    'svc.servicedesk.tickets.list': async (q, { ctx }) => {
      const em = fork();
      const p = await prepare(em, q, ctx);
      if (!p) return { items: [], total: 0, page: q.page, per_page: q.per_page };
      const [total, rows] = await Promise.all([
        count(p),
        sql<TicketRow>(fork(), `SELECT ${p.columns} FROM ${p.from} ORDER BY ${p.order} LIMIT ? OFFSET ?`, [
          ...p.params,
          q.per_page,
          offsetOf(q.page, q.per_page),
        ]),
      ]);
      return { items: rows.map(ticketOut), total, page: q.page, per_page: q.per_page };
    },

    'svc.servicedesk.tickets.get': async ({ issue_key, organization_id }, { ctx }) => {
      const found = await locateForRead(fork(), ctx, issue_key, organization_id);
      const key = found.issue_key;
      const now = deps.clock.now();
      if (!found.stored) {
        const [row] = await sql<TicketRow>(
          fork(),
          `SELECT ${ticketColumns('v.pending')} FROM (${PENDING_CREATES} AND p.issue_key = ?) v`,
          [key],
        );
        if (!row) throw new DomainError('not_found', `request ${key} not found`);
        const derived: DerivedRow = {
          created_at: row.created_at,
          started_at: null,
          resolved_at: null,
          due_date: null,
          first_response_ms: null,
          first_response_breached: null,
          resolution_breached: null,
          resolution_sla_status: 'none',
          sla: [],
        };
        return { ticket: ticketOut(row), status_history: [], ...slaAndDelivery(derived, now) };
      }
      // The three parts are independent reads: loaded in parallel.
      const [ticketRows, history, derivedRows] = await Promise.all([
        sql<TicketRow>(
          fork(),
          `SELECT ${ticketColumns('v.pending')} FROM (${WITH_TRANSITIONS} WHERE r.issue_key = ?) v`,
          [key],
        ),
        sql<{ from_status: string | null; to_status: string; changed_at: string }>(
          fork(),
          `SELECT from_status, to_status, changed_at FROM sd_status_history WHERE issue_key = ? ORDER BY seq`,
          [key],
        ),
        sql<DerivedRow>(
          fork(),
          `SELECT created_at, started_at, resolved_at, due_date::text AS due_date, first_response_ms, first_response_breached, resolution_breached, resolution_sla_status, sla
           FROM sd_requests WHERE issue_key = ?`,
          [key],
        ),
      ]);
      const [row] = ticketRows;
      const [derived] = derivedRows;
      if (!row || !derived) throw new DomainError('not_found', `request ${key} not found`);
      return {
        ticket: ticketOut(row),
        status_history: history.map((h) => ({
          from_status: h.from_status,
          to_status: h.to_status,
          changed_at: iso(h.changed_at),
        })),
        ...slaAndDelivery(derived, now),
      };
    },

    'svc.servicedesk.kanban': async (f, { ctx }) => {
      const em = fork();
      const p = await prepare(em, f, ctx);
      if (!p) return EMPTY_BOARD;
      // PostgreSQL writes each ticket's JSON: the board reaches this process as 500 strings instead of 500 row objects
      // of 23 fields made into 500 ticket objects, and goes out without being parsed or joined (JsonText).
      const [rows, total] = await Promise.all([
        sql<BoardRow>(
          em,
          `SELECT v.status_category, v.status, ${ticketJson(p.pending)} AS ticket
           FROM ${p.from} ORDER BY ${p.order} LIMIT ${KANBAN_LIMIT}`,
          p.params,
        ),
        count(p),
      ]);
      return jsonText<z.input<typeof KanbanBoard>>(boardJson(rows, total));
    },

    'svc.servicedesk.export': async (f, { ctx }) => {
      const em = fork();
      const p = await prepare(em, f, ctx);
      const rows = p
        ? await sql<TicketRow>(
            em,
            `SELECT ${p.columns} FROM ${p.from} ORDER BY ${p.order} LIMIT ${EXPORT_LIMIT}`,
            p.params,
          )
        : [];
      const records = rows.map((r) =>
        [
          r.issue_key,
          r.summary,
          r.status,
          r.status_category,
          r.priority ?? '',
          r.issue_type ?? '',
          r.assignee ?? '',
          r.reporter_email ?? '',
          r.organization_ids.join(' '),
          r.labels.join(' '),
          r.linked_issue_key ?? '',
          iso(r.created_at),
          iso(r.updated_at),
          isoOrNull(r.resolved_at) ?? '',
          r.due_date ?? '',
        ].map(neutralize),
      );
      const csv = stringify([CSV_HEADER, ...records], { quoted_match: /[",\r\n]/ });
      const day = new Date(deps.clock.now()).toISOString().slice(0, 10).replaceAll('-', '');
      return { filename: `service-desk-export-${day}.csv`, rows: records.length, csv };
    },

    'svc.servicedesk.actions.list': async ({ issue_key, organization_id, page, per_page }, { ctx }) => {
      const em = fork();
      // The log is kept under the support key; an engineering key finds it through its link.
      const key = (await locateForRead(em, ctx, issue_key, organization_id)).issue_key;
      return pageOf(
        em,
        {
          columns: 'id, issue_key, action, actor_id, actor_email, details, created_at',
          from: 'sd_actions WHERE issue_key = ?',
          params: [key],
          order: 'created_at DESC, id',
        },
        { page, per_page },
        (
          rows: {
            id: string;
            issue_key: string;
            action: string;
            actor_id: string | null;
            actor_email: string | null;
            details: Record<string, unknown>;
            created_at: string;
          }[],
        ) => rows.map((a) => ({ ...a, created_at: iso(a.created_at) })),
      );
    },
  };
}
