import { MARKER_MAX_ALERTS, MARKER_MAX_DEPLOYS } from '../../../contracts/domains/events-charts.ts';
import { iso, isoOrNull, sql } from '../../../platform/stores/sql.ts';
import { grantFilter, holdsOn, requireOn, resolveTarget, rowGrant, type Target } from '../access.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';

interface AlertRow {
  id: string;
  name: string;
  severity: string;
  status: 'firing' | 'resolved';
  fired_at: string;
  resolved_at: string | null;
  acknowledged_at: string | null;
  host_id: string | null;
}
interface DeployRow {
  id: string;
  at: string;
  source: 'github' | 'gitlab' | 'argocd';
  event_type: string;
  summary: string;
  app: string;
  revision: string;
  url: string | null;
  failed: boolean;
}

/** Alerts of a chart: a host's own; an environment's (its hosts' and its own); all of a client's, client-wide ones included. */
function alertPlace(t: Target, params: unknown[]): string {
  if (t.kind === 'host') return (params.push(t.host_id), 'host_id = ?');
  if (t.kind === 'environment') return (params.push(t.environment_id), 'environment_id = ?');
  return (params.push(t.client_id), 'client_id = ?');
}

/** Deploys of a chart: its environment's and the client-wide ones; all of a client's on a client chart. */
function deployPlace(t: Target, params: unknown[]): string {
  if (t.kind === 'client') return (params.push(t.client_id), 'client_id = ?');
  params.push(t.client_id, t.environment_id);
  return 'client_id = ? AND (environment_id = ? OR environment_id IS NULL)';
}

/**
 * `GET /api/v1/chart-markers` (docs/api/events.md#chart-markers): alert windows overlapping the range (first fired
 * at or before its end, ended at or after its start; an unresolved group ends now, a resolved one without a resolved
 * time at its first fired time), newest 200; deploys in the range, newest 100; each list oldest first. A type the
 * caller cannot read (alerts:read, changes:read) comes back empty.
 */
export function markerHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.chart_markers': async (q, scope) => {
      const { ctx } = scope;
      const t = await resolveTarget(deps.fleet, ctx, q, { deadline: scope.deadline, traceparent: scope.traceparent });
      requireOn(ctx, 'metrics:read', t);
      const now = new Date(deps.clock.now()).toISOString();

      const alerts = async (): Promise<AlertRow[]> => {
        if (!q.types.includes('alerts') || !holdsOn(ctx, 'alerts:read', t)) return [];
        const params: unknown[] = [];
        const place = alertPlace(t, params);
        params.push(q.end, now, q.start);
        const filter = grantFilter(rowGrant(ctx, 'alerts:read', t), 'environment_id', params);
        params.push(MARKER_MAX_ALERTS);
        return sql<AlertRow>(
          deps.orm.em.fork(),
          `SELECT id, name, severity, status, fired_at, resolved_at, acknowledged_at, host_id FROM alert_groups
            WHERE ${place} AND fired_at <= ?
              AND (CASE WHEN status = 'resolved' THEN coalesce(resolved_at, fired_at) ELSE greatest(?::timestamptz, fired_at) END) >= ?${filter}
            ORDER BY fired_at DESC, id DESC LIMIT ?`,
          params,
        );
      };
      const deploys = async (): Promise<DeployRow[]> => {
        if (!q.types.includes('deploys') || !holdsOn(ctx, 'changes:read', t)) return [];
        const params: unknown[] = [];
        const place = deployPlace(t, params);
        params.push(q.start, q.end);
        const filter = grantFilter(rowGrant(ctx, 'changes:read', t), 'environment_id', params);
        params.push(MARKER_MAX_DEPLOYS);
        return sql<DeployRow>(
          deps.orm.em.fork(),
          `SELECT id, at, source, event_type, summary, app, revision, url, failed FROM deploys
            WHERE ${place} AND at >= ? AND at <= ?${filter} ORDER BY at DESC, id DESC LIMIT ?`,
          params,
        );
      };
      const [a, d] = await Promise.all([alerts(), deploys()]);
      return {
        alerts: a.reverse().map((r) => ({
          id: r.id,
          name: r.name,
          severity: r.severity,
          status: r.status === 'resolved' ? 'resolved' : r.acknowledged_at !== null ? 'acknowledged' : 'firing',
          fired_at: iso(r.fired_at),
          resolved_at: isoOrNull(r.resolved_at),
          host_id: r.host_id,
        })),
        deploys: d.reverse().map((r) => ({ ...r, at: iso(r.at) })),
      };
    },
  };
}
