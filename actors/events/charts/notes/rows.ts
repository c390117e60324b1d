import type { EntityManager } from '@mikro-orm/postgresql';
import { hasPermission } from '../../../../contracts/access.ts';
import type { CallerContext } from '../../../../contracts/context.ts';
import type { Note } from '../../../../contracts/domains/events-charts.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { grantIn, hasOnEnvironment } from '../../../../platform/scope.ts';
import { iso, isoOrNull, isoSql, sql } from '../../../../platform/stores/sql.ts';

/** A note as stored, how it is shown, and the checks every note route makes. */

export interface Row {
  id: string;
  scope: Note['scope'];
  kind: Note['kind'];
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  timestamp: string;
  ends_at: string | null;
  text: string;
  created_by: string;
  created_by_name: string;
  created_at: string;
  updated_at: string;
}
export const COLUMNS =
  'id, scope, kind, client_id, environment_id, host_id, "timestamp", ends_at, text, created_by, created_by_name, created_at, updated_at';

export const out = (r: Row): Note => ({
  ...r,
  timestamp: iso(r.timestamp),
  ends_at: isoOrNull(r.ends_at),
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

/**
 * A note as JSON text written by PostgreSQL, field for field what JSON.stringify(out(row)) writes for the same row (a
 * test compares them): row_to_json is compact and keeps the columns' order.
 */
export const NOTE_JSON = `row_to_json((SELECT n FROM (SELECT a.id, a.scope, a.kind, a.client_id, a.environment_id, a.host_id,
  ${isoSql('a."timestamp"')} AS "timestamp", ${isoSql('a.ends_at')} AS ends_at, a.text, a.created_by, a.created_by_name,
  ${isoSql('a.created_at')} AS created_at, ${isoSql('a.updated_at')} AS updated_at) n))::text`;

/** annotations:write where the note sits: its environment (or client-wide) for host and environment notes, the client for client notes. */
export function canWriteAt(ctx: CallerContext, n: { client_id: string; environment_id: string | null }): boolean {
  return n.environment_id !== null
    ? hasOnEnvironment(ctx, 'annotations:write', n.client_id, n.environment_id)
    : hasPermission(ctx, 'annotations:write', n.client_id);
}

/** A note row the caller's metrics:read covers (client-wide notes: any metrics:read in the client). */
function readable(ctx: CallerContext, n: { client_id: string; environment_id: string | null }): boolean {
  const g = grantIn(ctx, n.client_id, 'metrics:read');
  return (
    g.kind === 'client' ||
    (g.kind === 'environments' && (n.environment_id === null || g.ids.includes(n.environment_id)))
  );
}

/** The note with this id when the caller can read it; 404 otherwise (missing and out of scope look the same). */
export async function loadNote(em: EntityManager, ctx: CallerContext, id: string, lock = false): Promise<Row> {
  const [row] = await sql<Row>(em, `SELECT ${COLUMNS} FROM annotations WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [id]);
  if (!row || !readable(ctx, row)) throw new DomainError('not_found', 'note not found');
  return row;
}
