import type { SdDeps, SdHandlers } from '../../deps.ts';
import { visibleWhere } from '../../scope.ts';
import { checkRange, rangeEndExclusive, rangeStart } from '../query.ts';
import { aggregate, int, num, scoped } from './aggregate.ts';

/** SLA figures of the requests created in a date range: first response and resolution times, compliance, breaches. */
export function slaMetricsHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.metrics.sla': async (q, { ctx }) => {
      const em = deps.orm.em.fork();
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
        deps,
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
  };
}
