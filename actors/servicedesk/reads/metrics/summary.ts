import type { SdDeps, SdHandlers } from '../../deps.ts';
import { visibleWhere } from '../../scope.ts';
import { aggregate, int, num, scoped } from './aggregate.ts';

/**
 * Where the summary's 30-day throughput window starts: a full instant with its zone (compared with a timestamptz, a
 * text without one would be read in the session's TimeZone), whole minutes so the memoized answer holds a minute.
 */
export function throughputSince(now: number): string {
  return new Date(Math.floor((now - 30 * 86_400_000) / 60_000) * 60_000).toISOString();
}

/** The all-time summary: open and resolved counts, mean times to acknowledge and resolve, compliance, 30-day throughput. */
export function summaryMetricsHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.metrics.summary': async (q, { ctx }) => {
      const em = deps.orm.em.fork();
      const mappings = await scoped(em, ctx, q);
      const visible = visibleWhere(mappings, 'v');
      const since = throughputSince(deps.clock.now());
      // All-time figures are sums over sd_request_totals (kept by the store's triggers, exact); the last 30 days'
      // throughput reads the resolved requests of that window through the delivery index.
      const recent = visibleWhere(mappings, 'r');
      const r = await aggregate(
        deps,
        'summary',
        `SELECT COALESCE(sum(v.requests) FILTER (WHERE v.status_category <> 'done'), 0) AS open_count,
                COALESCE(sum(v.requests) FILTER (WHERE v.status_category = 'done'), 0) AS resolved_count,
                sum(v.acknowledge_seconds) / NULLIF(sum(v.acknowledged), 0) / 3600.0 AS mtta,
                sum(v.resolve_seconds) / NULLIF(sum(v.resolved), 0) / 3600.0 AS mttr,
                100.0 * sum(v.sla_met) / NULLIF(sum(v.sla_known), 0) AS compliance,
                (SELECT count(*) FROM sd_requests r WHERE ${recent.sql} AND r.resolved_at >= ?::timestamptz) AS throughput
         FROM sd_request_totals v WHERE ${visible.sql}`,
        [...recent.params, since, ...visible.params],
      );
      return {
        open_count: int(r?.open_count),
        resolved_count: int(r?.resolved_count),
        mtta_hours: num(r?.mtta),
        mttr_hours: num(r?.mttr),
        sla_compliance_percent: num(r?.compliance),
        throughput_30d: int(r?.throughput),
      };
    },
  };
}
