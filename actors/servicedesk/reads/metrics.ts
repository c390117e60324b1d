import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from '../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../deps.ts';
import { mappingsFor, requireOrganizationFilter, visibleWhere } from '../scope.ts';
import { checkRange, rangeEndExclusive, rangeStart } from './query.ts';

/**
 * The metrics routes read the store only (no pending writes), over the requests the caller's mappings cover.
 * Definitions (docs/api/service-desk.md): hours and days are wall-clock; percentages are 0-100 with two decimals, null without data.
 */

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100);
const int = (v: unknown): number => Number(v ?? 0);
/** Microseconds in a day, as a SQL literal (cycle times are kept in microseconds). */
const DAY_US = '86400000000.0';

/**
 * Where the summary's 30-day throughput window starts: a full instant with its zone (compared with a timestamptz, a
 * text without one would be read in the session's TimeZone), whole minutes so the memoized answer holds a minute.
 */
export function throughputSince(now: number): string {
  return new Date(Math.floor((now - 30 * 86_400_000) / 60_000) * 60_000).toISOString();
}

export function metricsHandlers(deps: SdDeps): SdHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  /** One row of aggregates, memoized per store generation. */
  const aggregate = async (
    kind: string,
    query: string,
    params: unknown[],
  ): Promise<Record<string, unknown> | undefined> =>
    (await deps.memo.memo(kind, query, params, () => sql<Record<string, unknown>>(fork(), query, params)))[0];

  const scoped = async (
    em: EntityManager,
    ctx: Parameters<typeof requireOrganizationFilter>[0],
    q: { organization_id?: string | undefined; client_id?: string | undefined },
  ) => {
    requireOrganizationFilter(ctx, q);
    return mappingsFor(em, ctx, 'servicedesk:read', q);
  };

  return {
    'svc.servicedesk.metrics.sla': async (q, { ctx }) => {
      const em = fork();
      const visible = visibleWhere(await scoped(em, ctx, q), 'v');
      checkRange(q.date_from, q.date_to);
      const where = [visible.sql];
      const params = [...visible.params];
      if (q.date_from) {
        where.push('v.created_at >= ?');
        params.push(rangeStart(q.date_from));
      }
      if (q.date_to) {
        where.push('v.created_at < ?');
        params.push(rangeEndExclusive(q.date_to));
      }
      const r = await aggregate(
        'sla',
        `SELECT count(*) AS total,
                avg(v.first_response_ms) / 3600000.0 AS frt_hours,
                avg(extract(epoch FROM v.resolved_at - v.created_at)) / 3600.0 AS res_hours,
                100.0 * count(*) FILTER (WHERE v.first_response_ms IS NOT NULL AND NOT v.first_response_breached) / NULLIF(count(*) FILTER (WHERE v.first_response_ms IS NOT NULL), 0) AS frt_pct,
                100.0 * count(*) FILTER (WHERE v.resolution_sla_status = 'met') / NULLIF(count(*) FILTER (WHERE v.resolution_sla_status IN ('met', 'breached') AND v.resolved_at IS NOT NULL), 0) AS res_pct,
                count(*) FILTER (WHERE v.first_response_breached OR v.resolution_breached) AS breaches
         FROM sd_requests v WHERE ${where.join(' AND ')}`,
        params,
      );
      return {
        date_from: q.date_from ? rangeStart(q.date_from) : null,
        date_to: q.date_to ? rangeEndExclusive(q.date_to) : null,
        total_requests: int(r?.total),
        avg_first_response_hours: num(r?.frt_hours),
        avg_resolution_hours: num(r?.res_hours),
        first_response_sla_percent: num(r?.frt_pct),
        resolution_sla_percent: num(r?.res_pct),
        breach_count: int(r?.breaches),
      };
    },

    'svc.servicedesk.metrics.delivery': async (q, { ctx }) => {
      const em = fork();
      const visible = visibleWhere(await scoped(em, ctx, q), 'v');
      checkRange(q.date_from, q.date_to);
      const where = [visible.sql, 'v.resolved_at IS NOT NULL'];
      const params = [...visible.params];
      if (q.date_from) {
        where.push('v.resolved_at >= ?');
        params.push(rangeStart(q.date_from));
      }
      if (q.date_to) {
        where.push('v.resolved_at < ?');
        params.push(rangeEndExclusive(q.date_to));
      }
      // cycle_us (resolved minus started, or created; never negative) and on_time (by the due date, else the resolution
      // SLA) are kept per row at write time (migration 0012): the covering index over resolved requests answers alone.
      const r = await aggregate(
        'delivery',
        `SELECT count(*) AS n, avg(v.cycle_us) / ${DAY_US} AS avg_days,
                percentile_cont(0.5) WITHIN GROUP (ORDER BY v.cycle_us) / ${DAY_US} AS median_days,
                percentile_cont(0.9) WITHIN GROUP (ORDER BY v.cycle_us) / ${DAY_US} AS p90_days,
                100.0 * count(*) FILTER (WHERE v.on_time) / NULLIF(count(*), 0) AS on_time_pct,
                min(v.resolved_at) AS first_resolved
         FROM sd_requests v WHERE ${where.join(' AND ')}`,
        params,
      );
      const n = int(r?.n);
      // Throughput per week over the range asked for (open ends: the first resolution, and now).
      const from = q.date_from
        ? Date.parse(rangeStart(q.date_from))
        : r?.first_resolved
          ? new Date(String(r.first_resolved)).getTime()
          : null;
      const to = q.date_to ? Date.parse(rangeEndExclusive(q.date_to)) : deps.clock.now();
      const weeks = from !== null && to > from ? (to - from) / (7 * 86_400_000) : null;
      return {
        date_from: q.date_from ? rangeStart(q.date_from) : null,
        date_to: q.date_to ? rangeEndExclusive(q.date_to) : null,
        resolved_count: n,
        avg_cycle_time_days: num(r?.avg_days),
        median_cycle_time_days: num(r?.median_days),
        p90_cycle_time_days: num(r?.p90_days),
        throughput: n,
        throughput_per_week: weeks && n > 0 ? num(n / Math.max(weeks, 1 / 7)) : n === 0 ? 0 : null,
        on_time_percent: num(r?.on_time_pct),
      };
    },

    'svc.servicedesk.metrics.summary': async (q, { ctx }) => {
      const em = fork();
      const mappings = await scoped(em, ctx, q);
      const visible = visibleWhere(mappings, 'v');
      const since = throughputSince(deps.clock.now());
      // All-time figures are sums over sd_request_totals (kept by the store's triggers, exact); the last 30 days'
      // throughput reads the resolved requests of that window through the delivery index.
      const recent = visibleWhere(mappings, 'r');
      const r = await aggregate(
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
