import { hasPermission } from '../../../../contracts/access.ts';
import { NOTE_MAX_LIST, type Note } from '../../../../contracts/domains/events-charts.ts';
import { jsonText } from '../../../../platform/json-text.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import { grantFilter, requireOn, resolveTarget, rowGrant } from '../../access.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { windowNotes } from '../../notifications/window-marks.ts';
import { COLUMNS, NOTE_JSON } from './rows.ts';

/** The notes a chart of a host, an environment or a client shows over a time range: its own and those above it. */
export function listNotesHandlers(deps: EventsDeps): EventsHandlers {
  return {
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
      const em = deps.orm.em.fork();
      const rows = await sql<{ note: string; ts: Date }>(
        em,
        `SELECT ${NOTE_JSON} AS note, a."timestamp" AS ts FROM (${union}) a WHERE true${filter} ORDER BY a."timestamp" DESC, a.id DESC LIMIT ?`,
        params,
      );
      // The maintenance windows over the chart, as read-only range notes, for readers of the client's notifications.
      const windows = hasPermission(ctx, 'notifications:read', t.client_id)
        ? await windowNotes(em, t, new Date(q.start), new Date(q.end))
        : [];
      const notes: string[] = [];
      let w = 0;
      for (let i = rows.length - 1; i >= 0; i--) {
        const at = new Date(rows[i]!.ts).getTime();
        while (w < windows.length && Date.parse(windows[w]!.timestamp) <= at) notes.push(JSON.stringify(windows[w++]));
        notes.push(rows[i]!.note);
      }
      while (w < windows.length) notes.push(JSON.stringify(windows[w++]));
      return jsonText<Note[]>(['[', notes.join(','), ']']);
    },
  };
}
