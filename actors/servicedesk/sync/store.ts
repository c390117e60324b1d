import type { EntityManager } from '@mikro-orm/postgresql';
import type { SlaChanged } from '../../../contracts/domains/servicedesk.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { MAPPING_COLUMNS, type MappingRow } from '../scope.ts';
import type { RequestRecord } from './normalize.ts';
import { changedCycles, slaEvents, type StoredSla } from './sla-events.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

/** Columns of sd_requests the sync writes, with their types for jsonb_to_recordset. */
const COLUMNS: [string, string][] = [
  ['issue_key', 'text'],
  ['issue_id', 'text'],
  ['project_key', 'text'],
  ['issue_number', 'integer'],
  ['service_desk_id', 'text'],
  ['request_type_id', 'text'],
  ['request_type', 'text'],
  ['summary', 'text'],
  ['status', 'text'],
  ['status_category', 'text'],
  ['priority', 'text'],
  ['priority_rank', 'smallint'],
  ['issue_type', 'text'],
  ['assignee', 'text'],
  ['assignee_email', 'text'],
  ['reporter_name', 'text'],
  ['reporter_email', 'text'],
  ['organization_ids', 'text[]'],
  ['labels', 'text[]'],
  ['linked_issue_key', 'text'],
  ['created_at', 'timestamptz'],
  ['updated_at', 'timestamptz'],
  ['resolved_at', 'timestamptz'],
  ['due_date', 'date'],
  ['started_at', 'timestamptz'],
  ['acknowledged_at', 'timestamptz'],
  ['first_response_ms', 'bigint'],
  ['first_response_breached', 'boolean'],
  ['resolution_ms', 'bigint'],
  ['resolution_breached', 'boolean'],
  ['resolution_sla_status', 'text'],
  ['sla', 'jsonb'],
  ['sla_facts', 'jsonb'],
];
const NAMES = COLUMNS.map(([c]) => c).join(', ');
const TYPED = COLUMNS.map(([c, t]) => `${c} ${t}`).join(', ');
const UPDATES = COLUMNS.filter(([c]) => c !== 'issue_key')
  .map(([c]) => `${c} = EXCLUDED.${c}`)
  .join(', ');

/**
 * Writes one page of requests in the caller's transaction: rows are upserted (an older copy, from an overlapping
 * re-read, never overwrites a newer one), their status history replaced, and the pending writes the store has now
 * caught up with are dropped. The whole page travels as one JSON parameter. Answers the SLA changes the copies that
 * replaced a stored one made, for the caller to publish before it commits.
 */
export async function upsertRequests(tx: EntityManager, records: readonly RequestRecord[]): Promise<SlaChanged[]> {
  if (records.length === 0) return [];
  const keys = records.map((r) => r.issue_key);
  // The stored copies, locked: what a copy replaces is what it is compared with, even against another instance's sync.
  const stored = await sql<StoredSla & { issue_key: string }>(
    tx,
    `SELECT issue_key, sla, sla_facts FROM sd_requests WHERE issue_key IN (?) ORDER BY issue_key FOR UPDATE`,
    [keys],
  );
  const prev = new Map(stored.map((r) => [r.issue_key, r]));
  const rows = records.map(({ history: _h, ...r }) => r);
  const written = await sql<{ issue_key: string }>(
    tx,
    `INSERT INTO sd_requests (${NAMES}, synced_at)
     SELECT ${NAMES}, now() FROM jsonb_to_recordset(?::jsonb) AS x(${TYPED})
     ON CONFLICT (issue_key) DO UPDATE SET ${UPDATES}, synced_at = now()
     WHERE sd_requests.updated_at <= EXCLUDED.updated_at
     RETURNING issue_key`,
    [pgJson(rows)],
  );
  // The history of a request whose stored copy is newer than this one stays as it is.
  await sql(
    tx,
    `DELETE FROM sd_status_history h USING jsonb_to_recordset(?::jsonb) AS x(issue_key text, updated_at timestamptz), sd_requests r
     WHERE h.issue_key = x.issue_key AND r.issue_key = x.issue_key AND r.updated_at = x.updated_at`,
    [pgJson(records.map((r) => ({ issue_key: r.issue_key, updated_at: r.updated_at })))],
  );
  const history = records.flatMap((r) =>
    r.history.map((h) => ({ issue_key: r.issue_key, updated_at: r.updated_at, ...h })),
  );
  if (history.length > 0) {
    await sql(
      tx,
      `INSERT INTO sd_status_history (issue_key, seq, from_status, to_status, changed_at)
       SELECT x.issue_key, x.seq, x.from_status, x.to_status, x.changed_at
       FROM jsonb_to_recordset(?::jsonb) AS x(issue_key text, updated_at timestamptz, seq integer, from_status text, to_status text, changed_at timestamptz)
       JOIN sd_requests r ON r.issue_key = x.issue_key AND r.updated_at = x.updated_at
       ON CONFLICT (issue_key, seq) DO NOTHING`,
      [pgJson(history)],
    );
  }
  // A created request is in the store now; a transition is once the stored copy is as new as the transition.
  await sql(
    tx,
    `DELETE FROM sd_pending p USING sd_requests r
     WHERE p.issue_key = r.issue_key AND r.issue_key IN (?) AND (p.kind = 'create' OR p.effective_at <= r.updated_at)`,
    [keys],
  );
  return slaChangesOf(tx, records, new Set(written.map((w) => w.issue_key)), prev);
}

/** The SLA events of the copies that were written; the mappings are read only when some cycle changed. */
async function slaChangesOf(
  tx: EntityManager,
  records: readonly RequestRecord[],
  written: ReadonlySet<string>,
  prev: ReadonlyMap<string, StoredSla>,
): Promise<SlaChanged[]> {
  const changed = records.filter(
    (r) => written.has(r.issue_key) && changedCycles(prev.get(r.issue_key), r.sla_facts).length > 0,
  );
  const organizations = [...new Set(changed.flatMap((r) => r.organization_ids))];
  if (organizations.length === 0) return [];
  const mappings = await sql<MappingRow>(
    tx,
    `SELECT ${MAPPING_COLUMNS} FROM sd_mappings WHERE organization_id IN (?)`,
    [organizations],
  );
  return changed.flatMap((r) => slaEvents(r, prev.get(r.issue_key), mappings));
}
