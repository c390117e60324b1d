import { hasPermission } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type { TimelineEvent, TimelineEventType } from '../../../contracts/domains/events-charts.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { iso, sql } from '../../../platform/stores/sql.ts';
import { grantsCondition, grantsOf, holdsOn, resolveTarget, type Target } from '../access.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { windowTimeline } from '../notifications/window-marks.ts';

/** What reading each kind of timeline row takes (the spec is silent; these are the permissions of the same data elsewhere). */
export const TIMELINE_PERMISSION: Record<TimelineEventType, string> = {
  deploy: 'changes:read',
  file_change: 'changes:read',
  agent_status: 'hosts:read',
  alert: 'alerts:read',
  notification: 'notifications:read',
};
const TYPES = Object.keys(TIMELINE_PERMISSION) as TimelineEventType[];

interface Row {
  timestamp: string;
  event_type: TimelineEventType;
  title: string;
  description: string;
  host_id: string | null;
  environment_id: string | null;
}

/** Rows of the named host or environment: its own, and the client-wide deploys of its client (as on its charts). */
function targetCondition(t: Target, params: unknown[]): string {
  if (t.kind === 'host') {
    params.push(t.host_id, t.client_id, t.environment_id);
    return `(t.host_id = ? OR (t.event_type = 'deploy' AND t.host_id IS NULL AND t.client_id = ? AND (t.environment_id = ? OR t.environment_id IS NULL)))`;
  }
  params.push(t.client_id, t.environment_id);
  return `(t.client_id = ? AND (t.environment_id = ? OR (t.event_type = 'deploy' AND t.environment_id IS NULL)))`;
}

/**
 * `GET /api/v1/events/timeline`: rows in [start, end], newest first, at most `limit`. Each kind of row is limited to
 * where the caller holds its permission; a caller who can read none of the requested kinds gets 403. A named host or
 * environment must be in reach (404 otherwise).
 */
export function timelineHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.timeline': async (q, scope) => {
      const ctx: CallerContext = scope.ctx;
      const opts = { deadline: scope.deadline, traceparent: scope.traceparent };
      let target: Target | undefined;
      if (q.host_id !== undefined) {
        target = await resolveTarget(deps.fleet, ctx, { host_id: q.host_id }, opts);
        if (q.environment_id !== undefined && target.environment_id !== q.environment_id) {
          await resolveTarget(deps.fleet, ctx, { environment_id: q.environment_id }, opts);
          return []; // a host outside the named environment: nothing matches both
        }
      } else if (q.environment_id !== undefined) {
        target = await resolveTarget(deps.fleet, ctx, { environment_id: q.environment_id }, opts);
      }
      const wanted = q.event_type ? [q.event_type] : TYPES;
      const params: unknown[] = [q.start, q.end];
      const where = [`t."timestamp" >= ?`, `t."timestamp" <= ?`];
      if (target) where.push(targetCondition(target, params));
      const byType: string[] = [];
      // Notifications are read client-wide only (docs/api/notifications.md): environment grants do not count for them.
      const clientWide = (type: string): boolean => type === 'notification';
      for (const type of wanted) {
        const perm = TIMELINE_PERMISSION[type];
        if (target) {
          if (clientWide(type) ? hasPermission(ctx, perm, target.client_id) : holdsOn(ctx, perm, target)) {
            byType.push(`t.event_type = ?`);
            params.push(type);
          }
          continue;
        }
        const all = grantsOf(ctx, perm);
        const g = clientWide(type) ? { ...all, environments: [] } : all;
        const typeParams: unknown[] = [type];
        const cond = grantsCondition(g, 't.client_id', 't.environment_id', typeParams);
        if (cond === 'false') continue;
        byType.push(`(t.event_type = ? AND ${cond})`);
        params.push(...typeParams);
      }
      if (byType.length === 0) {
        throw new DomainError(
          'forbidden',
          `missing permission ${[...new Set(wanted.map((t) => TIMELINE_PERMISSION[t]))].join(' or ')}${target ? ` on this ${target.kind}` : ''}`,
        );
      }
      where.push(`(${byType.join(' OR ')})`);
      params.push(q.limit);
      const em = deps.orm.em.fork();
      const rows = await sql<Row>(
        em,
        `SELECT t."timestamp", t.event_type, t.title, t.description, t.host_id, t.environment_id FROM timeline_events t
          WHERE ${where.join(' AND ')} ORDER BY t."timestamp" DESC, t.id DESC LIMIT ?`,
        params,
      );
      const events = rows.map((r): TimelineEvent => ({ ...r, timestamp: iso(r.timestamp) }));
      // A host's or an environment's maintenance windows, at each occurrence's start, for readers of notifications.
      if (!target || !wanted.includes('notification') || !hasPermission(ctx, 'notifications:read', target.client_id))
        return events;
      const windows = await windowTimeline(em, target, new Date(q.start), new Date(q.end));
      if (windows.length === 0) return events;
      return [...events, ...windows]
        .sort((a, b) => Date.parse(b.timestamp) - Date.parse(a.timestamp))
        .slice(0, q.limit);
    },
  };
}
