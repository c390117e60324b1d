import { randomUUID } from 'node:crypto';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import { WINDOW_IMMUTABLE } from '../../../contracts/domains/events-notifications.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import { requireOnClient } from '../../../platform/scope.ts';
import type { RequestScope } from '../../../platform/serve.ts';
import { pageOf, sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { occurrencesBetween, parseWindowRule, validTimeZone } from './maintenance-windows.ts';
import { clientFilter, emptyPage, loadOwned, READ, WINDOW_COLUMNS, windowOut, WRITE, type WindowRow } from './rows.ts';
import { checkPlace } from './rules.ts';

const WHAT = 'maintenance window';
const YEAR_MS = 366 * 86_400_000;

/** What a create or update sets: the stored window's own fields. */
type WindowInput = Omit<WindowRow, 'id' | 'client_id' | 'created_by' | 'created_at' | 'updated_at'>;

/** The zone must be an IANA name, the start a real local time, the rule a strict RRULE; the window must occur. */
function checkWindow(b: WindowInput, now: number): void {
  if (!validTimeZone(b.timezone))
    throw new DomainError('bad_request', `timezone: "${b.timezone}" is not a time zone name such as Europe/Berlin`);
  if (b.rrule !== null) {
    const rule = parseWindowRule(b.rrule);
    if (!rule.ok) throw new DomainError('bad_request', `rrule: ${rule.message}`);
  }
  let first: unknown[];
  try {
    first = occurrencesBetween(b, new Date(0), new Date(now + 10 * YEAR_MS), 1);
  } catch (err) {
    throw new DomainError('bad_request', (err as Error).message.replace(/^starts_at must/, 'starts_at: must'));
  }
  if (first.length === 0) throw new DomainError('bad_request', 'rrule: the window never occurs in the next ten years');
}

const values = (b: WindowInput): unknown[] => [
  b.environment_id,
  b.host_id,
  b.name,
  b.starts_at,
  b.timezone,
  b.duration_minutes,
  b.rrule,
];

/**
 * Maintenance windows (`notifications:*`) of a client, an environment or a host: one-off, or recurring by an RRULE at
 * a local time in a named zone. While one is in force, the notifications of what it covers are recorded as
 * suppressed instead of sent.
 */
export function windowHandlers(deps: EventsDeps): EventsHandlers {
  const now = (): number => deps.clock.now();
  const load = (scope: RequestScope<SystemCatalogue>, id: string, perm: string) =>
    loadOwned<WindowRow>(deps.orm.em.fork(), scope.ctx, 'maintenance_windows', WINDOW_COLUMNS, id, perm, WHAT);
  return {
    'svc.events.maintenance_windows.list': async (q, { ctx }) => {
      const params: unknown[] = [];
      const where = clientFilter(ctx, q.client_id, params);
      if (where === null) return emptyPage(q);
      return pageOf(
        deps.orm.em.fork(),
        {
          columns: WINDOW_COLUMNS,
          from: `maintenance_windows WHERE ${where}`,
          params,
          order: 'created_at DESC, id DESC',
        },
        q,
        (rows: WindowRow[]) => rows.map((r) => windowOut(r, now())),
      );
    },

    'svc.events.maintenance_windows.get': async ({ id }, scope) => windowOut(await load(scope, id, READ), now()),

    'svc.events.maintenance_windows.occurrences': async ({ id, from, to }, scope) => {
      const row = await load(scope, id, READ);
      const lo = new Date(from);
      const hi = new Date(to);
      if (!(hi > lo)) throw new DomainError('bad_request', 'to: must be after from');
      if (hi.getTime() - lo.getTime() > 10 * YEAR_MS)
        throw new DomainError('bad_request', 'to: at most ten years after from');
      return occurrencesBetween(row, lo, hi, 500).map((o) => ({
        start: o.start.toISOString(),
        end: o.end.toISOString(),
      }));
    },

    'svc.events.maintenance_windows.create': async (b, scope) => {
      requireOnClient(scope.ctx, b.client_id, WRITE, 'client');
      checkWindow(b, now());
      await checkPlace(deps, scope, b.client_id, b);
      const id = randomUUID();
      const [row] = await sql<WindowRow>(
        deps.orm.em.fork(),
        `INSERT INTO maintenance_windows (id, client_id, environment_id, host_id, name, starts_at, timezone, duration_minutes, rrule, created_by)
         SELECT ?, id, ?, ?, ?, ?, ?, ?, ?, ? FROM clients WHERE id = ? RETURNING ${WINDOW_COLUMNS}`,
        [id, ...values(b), scope.ctx.principal.kind === 'user' ? scope.ctx.principal.user_id : null, b.client_id],
      );
      if (!row) throw new DomainError('not_found', 'client not found');
      await deps.audit.record(scope.ctx, {
        action: 'maintenance_window.created',
        resource_type: 'maintenance_window',
        resource_id: id,
        client_ids: [b.client_id],
        details: { ...b },
      });
      return windowOut(row, now());
    },

    'svc.events.maintenance_windows.update': async (b, scope) => {
      const current = await load(scope, b.id, WRITE);
      refuseChanges(b, windowOut(current, now()), WINDOW_IMMUTABLE);
      checkWindow(b, now());
      await checkPlace(deps, scope, current.client_id, b);
      const [row] = await sql<WindowRow>(
        deps.orm.em.fork(),
        `UPDATE maintenance_windows SET environment_id = ?, host_id = ?, name = ?, starts_at = ?, timezone = ?, duration_minutes = ?, rrule = ?, updated_at = now()
          WHERE id = ? RETURNING ${WINDOW_COLUMNS}`,
        [...values(b), b.id],
      );
      if (!row) throw new DomainError('not_found', `${WHAT} not found`);
      await deps.audit.record(scope.ctx, {
        action: 'maintenance_window.updated',
        resource_type: 'maintenance_window',
        resource_id: b.id,
        client_ids: [current.client_id],
        details: { before: windowOut(current, now()), after: windowOut(row, now()) },
      });
      return windowOut(row, now());
    },

    'svc.events.maintenance_windows.delete': async ({ id }, scope) => {
      const row = await load(scope, id, WRITE);
      await sql(deps.orm.em.fork(), `DELETE FROM maintenance_windows WHERE id = ?`, [id]);
      await deps.audit.record(scope.ctx, {
        action: 'maintenance_window.deleted',
        resource_type: 'maintenance_window',
        resource_id: id,
        client_ids: [row.client_id],
        details: { client_id: row.client_id, name: row.name },
      });
      return {};
    },
  };
}
