import type { SdDeps, SdHandlers } from '../../deps.ts';
import { visibleWhere } from '../../scope.ts';
import { checkRange, rangeEndExclusive, rangeStart } from '../query.ts';
import { aggregate, int, num, scoped } from './aggregate.ts';

/** Microseconds in a day, as a SQL literal (cycle times are kept in microseconds). */
const DAY_US = '86400000000.0';

/** Delivery figures of the requests resolved in a date range: cycle times, throughput, the share on time. */
export function deliveryMetricsHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.metrics.delivery': async (q, { ctx }) => {
      const em = deps.orm.em.fork();
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
        deps,
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
  };
}
