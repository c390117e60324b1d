import type { z } from 'zod';
import type { CallerContext } from '../../../contracts/context.ts';
import type { Ticket, TicketFilters } from '../../../contracts/domains/servicedesk.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { iso, isoOrNull, isoSql } from '../../../platform/stores/sql.ts';
import { visibleWhere, type MappingRow } from '../scope.ts';
import type { RequestColumns } from '../sync/normalize.ts';

export type Filters = z.output<typeof TicketFilters>;

/** Stored requests with the latest unconfirmed transition laid over their status. */
export const WITH_TRANSITIONS = `
  SELECT r.issue_key, r.issue_id, r.project_key, r.issue_number, r.service_desk_id, r.request_type_id, r.request_type, r.summary,
         COALESCE(t.status, r.status) AS status, COALESCE(t.status_category, r.status_category) AS status_category,
         r.priority, r.priority_rank, r.issue_type, r.assignee, r.assignee_email, r.reporter_name, r.reporter_email,
         r.organization_ids, r.labels, r.linked_issue_key, r.created_at, r.updated_at, r.resolved_at, r.due_date,
         r.search_key, r.search_summary, (t.issue_key IS NOT NULL) AS pending
  FROM sd_requests r
  LEFT JOIN (SELECT DISTINCT ON (issue_key) issue_key, status, status_category, effective_at FROM sd_pending WHERE kind = 'transition' ORDER BY issue_key, effective_at DESC) t
    ON t.issue_key = r.issue_key AND t.effective_at > r.updated_at`;

/** Requests created through this service that the store does not hold yet, as rows of the same shape (status PENDING). */
export const PENDING_CREATES = `
  SELECT p.issue_key, p.fields->>'issue_id' AS issue_id, p.fields->>'project_key' AS project_key,
         COALESCE((p.fields->>'issue_number')::int, 0) AS issue_number, p.fields->>'service_desk_id' AS service_desk_id,
         p.fields->>'request_type_id' AS request_type_id, NULL::text AS request_type, COALESCE(p.fields->>'summary', '') AS summary,
         p.status, p.status_category, NULL::text AS priority, 0::smallint AS priority_rank, NULL::text AS issue_type,
         NULL::text AS assignee, NULL::text AS assignee_email, p.fields->>'reporter_name' AS reporter_name, p.fields->>'reporter_email' AS reporter_email,
         ARRAY[p.organization_id] AS organization_ids, ARRAY(SELECT jsonb_array_elements_text(COALESCE(p.fields->'labels', '[]'::jsonb))) AS labels,
         NULL::text AS linked_issue_key, p.effective_at AS created_at, p.effective_at AS updated_at, NULL::timestamptz AS resolved_at, NULL::date AS due_date,
         lower(p.issue_key) AS search_key, lower(COALESCE(p.fields->>'summary', '')) AS search_summary, true AS pending
  FROM sd_pending p
  WHERE p.kind = 'create' AND NOT EXISTS (SELECT 1 FROM sd_requests r WHERE r.issue_key = p.issue_key)`;

/** What a ticket row selects from the source `v`. */
export const ticketColumns = (pending: string): string =>
  `v.issue_key, v.issue_id, v.project_key, v.service_desk_id, v.request_type_id, v.request_type, v.summary, v.status, v.status_category,
   v.priority, v.issue_type, v.assignee, v.assignee_email, v.reporter_name, v.reporter_email, v.organization_ids, v.labels, v.linked_issue_key,
   v.created_at, v.updated_at, v.resolved_at, v.due_date::text AS due_date, ${pending} AS pending`;

/**
 * A ticket as JSON text written by PostgreSQL, field for field what JSON.stringify(ticketOut(row)) writes for the same
 * row (a test compares them): row_to_json is compact and keeps the columns' order.
 */
export const ticketJson = (pending: string): string =>
  `row_to_json((SELECT t FROM (SELECT v.issue_key, v.issue_id, v.project_key, v.service_desk_id, v.request_type_id,
     v.request_type, v.summary, v.status, v.status_category, v.priority, v.issue_type, v.assignee, v.assignee_email,
     v.reporter_name, v.reporter_email, v.organization_ids, v.labels, v.linked_issue_key, ${isoSql('v.created_at')} AS created,
     ${isoSql('v.updated_at')} AS updated, ${isoSql('v.resolved_at')} AS resolved, v.due_date::text AS due_date,
     ${pending} AS pending) t))::text`;

/** A ticket as the reads select it (ticketColumns): the request's shown columns (a pending create has no issue id yet). */
export interface TicketRow extends RequestColumns {
  issue_id: string | null;
  pending: boolean;
}

export const ticketOut = (r: TicketRow): Ticket => ({
  issue_key: r.issue_key,
  issue_id: r.issue_id,
  project_key: r.project_key,
  service_desk_id: r.service_desk_id,
  request_type_id: r.request_type_id,
  request_type: r.request_type,
  summary: r.summary,
  status: r.status,
  status_category: r.status_category,
  priority: r.priority,
  issue_type: r.issue_type,
  assignee: r.assignee,
  assignee_email: r.assignee_email,
  reporter_name: r.reporter_name,
  reporter_email: r.reporter_email,
  organization_ids: r.organization_ids,
  labels: r.labels,
  linked_issue_key: r.linked_issue_key,
  created: iso(r.created_at),
  updated: iso(r.updated_at),
  resolved: isoOrNull(r.resolved_at),
  due_date: r.due_date,
  pending: r.pending,
});

/**
 * Where tickets are read from: the stored requests alone while nothing written through this service is waiting for
 * the sync (the common case, and the one the indexes serve), otherwise the stored requests with pending writes merged.
 * Whether writes wait comes with the mappings (mappingsFor's withPending): one statement for both.
 */
export function ticketSource(mappings: readonly { has_pending: boolean }[]): { from: string; pending: string } {
  if (!mappings.some((m) => m.has_pending)) return { from: 'sd_requests v', pending: 'false' };
  return { from: `(${WITH_TRANSITIONS} UNION ALL ${PENDING_CREATES}) v`, pending: 'v.pending' };
}

const escapeLike = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`);
const DATE_ONLY = /^\d{4}-\d\d-\d\d$/;

/** The start of a range bound: a date is its midnight UTC. */
export const rangeStart = (v: string): string => (DATE_ONLY.test(v) ? `${v}T00:00:00.000Z` : new Date(v).toISOString());
/** The end of a range bound, exclusive: a date covers its whole day. */
export const rangeEndExclusive = (v: string): string =>
  DATE_ONLY.test(v)
    ? new Date(Date.parse(`${v}T00:00:00.000Z`) + 86_400_000).toISOString()
    : new Date(Date.parse(v) + 1).toISOString();

/** What PostgreSQL's timestamptz takes, with a day to spare for an exclusive end (a bound outside it would be a 500). */
const FIRST_DAY_MS = Date.parse('0001-01-01T00:00:00.000Z');
const PAST_LAST_DAY_MS = Date.parse('9999-12-31T00:00:00.000Z');

/** 400 for a bound outside the years the store can compare with, or a range that ends before it starts. */
export function checkRange(from: string | undefined, to: string | undefined): void {
  for (const [name, v] of [
    ['date_from', from],
    ['date_to', to],
  ] as const) {
    if (v === undefined) continue;
    const ms = Date.parse(rangeStart(v));
    if (!(ms >= FIRST_DAY_MS && ms < PAST_LAST_DAY_MS))
      throw new DomainError('bad_request', `${name} must lie between 0001-01-01 and 9999-12-30`);
  }
  if (from && to && rangeStart(from) >= rangeEndExclusive(to))
    throw new DomainError('bad_request', 'date_from must not be after date_to');
}

/**
 * The WHERE of the tickets, board and export: what the mappings cover, then every filter. `totals`: the condition reads
 * only columns sd_request_totals groups by (scope, status, category, priority, type), so it counts there too.
 * `searchCopy`: a search, and otherwise only the scope, which sd_request_search holds (a narrower table to count in).
 */
export function ticketWhere(
  mappings: readonly MappingRow[],
  f: Filters,
  ctx: CallerContext,
): { sql: string; params: unknown[]; totals: boolean; searchCopy: boolean } {
  const visible = visibleWhere(mappings, 'v');
  const where = [visible.sql];
  const params = [...visible.params];
  let totals = true;
  let searchCopy = true;
  const push = (clause: string, p: unknown[]): void => {
    where.push(clause);
    params.push(...p);
  };
  /** A condition on a column the totals group by (and the search copy does not hold). */
  const add = (clause: string, ...p: unknown[]): void => {
    searchCopy = false;
    push(clause, p);
  };
  /** A condition on a column the totals do not group by. */
  const addRowLevel = (clause: string, ...p: unknown[]): void => {
    totals = false;
    add(clause, ...p);
  };
  if (f.status) add('v.status = ?', f.status);
  // Exact values, like status: the tracker's own names (the filters then use the scan index).
  if (f.priority) add('v.priority = ?', f.priority);
  if (f.issue_type) add('v.issue_type = ?', f.issue_type);
  if (f.assignee)
    addRowLevel('(lower(v.assignee) = lower(?) OR lower(v.assignee_email) = lower(?))', f.assignee, f.assignee);
  if (f.search) {
    // Case-insensitive substring of the key or summary. ILIKE is lower() of both sides then LIKE (UTF-8 database):
    // the lowered copies (search_key, search_summary, trigram-indexed) give the same answer without lowering each row.
    const like = `%${escapeLike(f.search)}%`;
    totals = false;
    push(`(v.search_key LIKE lower(?) OR v.search_summary LIKE lower(?))`, [like, like]);
  }
  checkRange(f.date_from, f.date_to);
  if (f.date_from) addRowLevel('v.created_at >= ?', rangeStart(f.date_from));
  if (f.date_to) addRowLevel('v.created_at < ?', rangeEndExclusive(f.date_to));
  if (f.my_requests) {
    if (ctx.principal.kind !== 'user')
      throw new DomainError('bad_request', 'my_requests needs a signed-in user (an e-mail to match reporters against)');
    addRowLevel('lower(v.reporter_email) = lower(?)', ctx.principal.email);
  }
  return { sql: where.join(' AND '), params, totals, searchCopy: searchCopy && Boolean(f.search) };
}

/** ORDER BY of a sort column; the issue key breaks ties in the same direction (so one index serves both). */
export function ticketOrder(f: Pick<Filters, 'sort_by' | 'sort_dir'>): string {
  const d = f.sort_dir;
  switch (f.sort_by) {
    case 'created':
      return `v.created_at ${d}, v.issue_key ${d}`;
    case 'updated':
      return `v.updated_at ${d}, v.issue_key ${d}`;
    case 'priority':
      return `v.priority_rank ${d}, v.updated_at DESC, v.issue_key ${d}`;
    case 'status':
      return `lower(v.status) ${d}, v.issue_key ${d}`;
    case 'issue_key':
      return `v.project_key ${d}, v.issue_number ${d}`;
    case 'summary':
      return `lower(v.summary) ${d}, v.issue_key ${d}`;
    case 'assignee':
      return `lower(v.assignee) ${d} NULLS LAST, v.issue_key ${d}`;
  }
}
