import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { hasPermission, requireUser } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { IMMUTABLE_NOTE_FIELDS, NOTE_MAX_LIST, type Note } from '../../../contracts/domains/events-charts.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import { grantIn, hasOnEnvironment, inReach, inReachOfEnvironment } from '../../../platform/scope.ts';
import { jsonText } from '../../../platform/json-text.ts';
import { iso, isoOrNull, isoSql, sql } from '../../../platform/stores/sql.ts';
import { grantFilter, requireOn, resolveTarget, rowGrant } from '../access.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';

/**
 * Notes on charts (console-operations.md, "Notes on charts"):
 * - written by signed-in users only (API keys 403) holding `annotations:write` at the note's scope: on the host's or
 *   environment's environment (or client-wide) for host and environment notes, client-wide for client notes;
 * - read through `metrics:read`: a note the caller's metrics:read does not cover is 404 for every route;
 * - changed by their author only (super admins included), who must still hold annotations:write there;
 * - deleted by their author, by any holder of annotations:write at their scope (a moderator) or by a super admin.
 */

interface Row {
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
const COLUMNS =
  'id, scope, kind, client_id, environment_id, host_id, "timestamp", ends_at, text, created_by, created_by_name, created_at, updated_at';

const out = (r: Row): Note => ({
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
const NOTE_JSON = `row_to_json((SELECT n FROM (SELECT a.id, a.scope, a.kind, a.client_id, a.environment_id, a.host_id,
  ${isoSql('a."timestamp"')} AS "timestamp", ${isoSql('a.ends_at')} AS ends_at, a.text, a.created_by, a.created_by_name,
  ${isoSql('a.created_at')} AS created_at, ${isoSql('a.updated_at')} AS updated_at) n))::text`;

/** annotations:write where the note sits: its environment (or client-wide) for host and environment notes, the client for client notes. */
function canWriteAt(ctx: CallerContext, n: { client_id: string; environment_id: string | null }): boolean {
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

export function noteHandlers(deps: EventsDeps): EventsHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  /** The note with this id when the caller can read it; 404 otherwise (missing and out of scope look the same). */
  async function load(em: EntityManager, ctx: CallerContext, id: string, lock = false): Promise<Row> {
    const [row] = await sql<Row>(em, `SELECT ${COLUMNS} FROM annotations WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [
      id,
    ]);
    if (!row || !readable(ctx, row)) throw new DomainError('not_found', 'note not found');
    return row;
  }

  return {
    'svc.events.annotations.create': async (b, scope) => {
      const { ctx } = scope;
      const user = requireUser(ctx);
      const opts = { deadline: scope.deadline, traceparent: scope.traceparent };
      let place: { client_id: string; environment_id: string | null; host_id: string | null };
      if (b.scope === 'host') {
        const h = await deps.fleet.host(ctx, b.host_id!, opts);
        if (!h || !inReachOfEnvironment(ctx, h.client_id, h.environment_id))
          throw new DomainError('not_found', 'host not found');
        place = { client_id: h.client_id, environment_id: h.environment_id, host_id: h.id };
      } else if (b.scope === 'environment') {
        const e = await deps.fleet.environment(ctx, b.environment_id!, opts);
        if (!e || !inReachOfEnvironment(ctx, e.client_id, e.id))
          throw new DomainError('not_found', 'environment not found');
        place = { client_id: e.client_id, environment_id: e.id, host_id: null };
      } else {
        if (!inReach(ctx, b.client_id!)) throw new DomainError('not_found', 'client not found');
        const c = await deps.fleet.client(ctx, b.client_id!, opts);
        if (!c) throw new DomainError('not_found', 'client not found');
        place = { client_id: c.id, environment_id: null, host_id: null };
      }
      if (!canWriteAt(ctx, place))
        throw new DomainError('forbidden', `missing permission annotations:write on this ${b.scope}`);
      const { users } = await scope.call('svc.identity.lookup.user_names', { user_ids: [user.user_id] });
      const name = users[0]?.display_name || user.email;
      const id = randomUUID();
      const [row] = await sql<Row>(
        fork(),
        `INSERT INTO annotations (id, scope, kind, client_id, environment_id, host_id, "timestamp", ends_at, text, created_by, created_by_name)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
        [
          id,
          b.scope,
          b.kind,
          place.client_id,
          place.environment_id,
          place.host_id,
          b.timestamp,
          b.ends_at ?? null,
          b.text,
          user.user_id,
          name,
        ],
      );
      const note = out(row!);
      await deps.audit.record(ctx, {
        action: 'annotation_created',
        resource_type: 'annotation',
        resource_id: id,
        client_ids: [place.client_id],
        details: { note },
      });
      return note;
    },

    'svc.events.annotations.list': async (q, scope) => {
      const { ctx } = scope;
      const t = await resolveTarget(deps.fleet, ctx, q, { deadline: scope.deadline, traceparent: scope.traceparent });
      requireOn(ctx, 'metrics:read', t);
      // One overlap test for both kinds: a point note's span is [t, t], inside the range exactly when it overlaps it.
      const range = `tstzrange(?::timestamptz, ?::timestamptz, '[]')`;
      const params: unknown[] = [];
      let union: string;
      if (t.kind === 'host') {
        union = `SELECT ${COLUMNS} FROM annotations WHERE scope = 'host' AND host_id = ? AND span && ${range}
          UNION ALL SELECT ${COLUMNS} FROM annotations WHERE scope = 'environment' AND environment_id = ? AND span && ${range}
          UNION ALL SELECT ${COLUMNS} FROM annotations WHERE scope = 'client' AND client_id = ? AND span && ${range}`;
        params.push(t.host_id, q.start, q.end, t.environment_id, q.start, q.end, t.client_id, q.start, q.end);
      } else if (t.kind === 'environment') {
        union = `SELECT ${COLUMNS} FROM annotations WHERE scope = 'environment' AND environment_id = ? AND span && ${range}
          UNION ALL SELECT ${COLUMNS} FROM annotations WHERE scope = 'host' AND environment_id = ? AND span && ${range}
          UNION ALL SELECT ${COLUMNS} FROM annotations WHERE scope = 'client' AND client_id = ? AND span && ${range}`;
        params.push(t.environment_id, q.start, q.end, t.environment_id, q.start, q.end, t.client_id, q.start, q.end);
      } else {
        union = `SELECT ${COLUMNS} FROM annotations WHERE client_id = ? AND span && ${range}`;
        params.push(t.client_id, q.start, q.end);
      }
      const filter = grantFilter(rowGrant(ctx, 'metrics:read', t), 'a.environment_id', params);
      params.push(NOTE_MAX_LIST);
      // The newest 500 when more match, listed oldest first like every chart series. PostgreSQL writes each note's
      // JSON: the list reaches this process as 500 strings instead of 500 rows of 13 fields made into 500 notes, and
      // leaves without being parsed or joined (JsonText). That garbage, promoted under load, made the list's p99.
      const rows = await sql<{ note: string }>(
        fork(),
        `SELECT ${NOTE_JSON} AS note FROM (${union}) a WHERE true${filter} ORDER BY a."timestamp" DESC, a.id DESC LIMIT ?`,
        params,
      );
      const parts = ['['];
      for (let i = rows.length - 1; i >= 0; i--) parts.push(i < rows.length - 1 ? `,${rows[i]!.note}` : rows[i]!.note);
      parts.push(']');
      return jsonText<Note[]>(parts);
    },

    'svc.events.annotations.update': async (b, { ctx }) => {
      const user = requireUser(ctx);
      const { before, after } = await fork().transactional(async (tx) => {
        const before = await load(tx, ctx, b.id, true);
        if (before.created_by !== user.user_id)
          throw new DomainError('forbidden', 'only the author of a note may change it');
        if (!canWriteAt(ctx, before))
          throw new DomainError('forbidden', `missing permission annotations:write on this ${before.scope}`);
        refuseChanges(b, out(before), IMMUTABLE_NOTE_FIELDS);
        const [after] = await sql<Row>(
          tx,
          `UPDATE annotations SET kind = ?, "timestamp" = ?, ends_at = ?, text = ?, updated_at = now() WHERE id = ? RETURNING ${COLUMNS}`,
          [b.kind, b.timestamp, b.ends_at ?? null, b.text, b.id],
        );
        return { before, after: after! };
      });
      const pick = (r: Row) => ({
        kind: r.kind,
        timestamp: iso(r.timestamp),
        ends_at: isoOrNull(r.ends_at),
        text: r.text,
      });
      await deps.audit.record(ctx, {
        action: 'annotation_updated',
        resource_type: 'annotation',
        resource_id: b.id,
        client_ids: [before.client_id],
        details: { before: pick(before), after: pick(after) },
      });
      return out(after);
    },

    'svc.events.annotations.delete': async ({ id }, { ctx }) => {
      const user = requireUser(ctx);
      const note = await fork().transactional(async (tx) => {
        const note = await load(tx, ctx, id, true);
        const allowed = user.is_super_admin || note.created_by === user.user_id || canWriteAt(ctx, note);
        if (!allowed)
          throw new DomainError(
            'forbidden',
            'only the author, a holder of annotations:write at its scope or a super admin may delete this note',
          );
        await sql(tx, `DELETE FROM annotations WHERE id = ?`, [id]);
        return note;
      });
      await deps.audit.record(ctx, {
        action: 'annotation_deleted',
        resource_type: 'annotation',
        resource_id: id,
        client_ids: [note.client_id],
        details: { note: out(note) },
      });
      return {};
    },
  };
}
