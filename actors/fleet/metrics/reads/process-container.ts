import { requireOnClient } from '../../scope.ts';
import {
  CONTAINER_COUNTERS,
  CONTAINER_GAUGES,
  PROCESS_METRICS,
  type MetricPoint,
} from '../../../../contracts/domains/fleet-metrics.ts';
import { bucketsOf, resolveRange, toPoints, type Acc } from '../buckets.ts';
import { counterRateBuckets, gaugeBuckets, hostFilter, selector } from '../store-reads.ts';
import type { MetricsReadHandlers, MetricsReads } from './deps.ts';

const names = (m: Record<string, string>): string => Object.values(m).join('|');

/** `{cpu_usage: points, …}` from buckets keyed by stored metric name. */
function pointsOf<K extends string>(
  mapping: Record<K, string>,
  byName: Map<string, Map<number, Acc>>,
): Record<K, MetricPoint[]> {
  const out = {} as Record<K, MetricPoint[]>;
  for (const key of Object.keys(mapping) as K[]) out[key] = toPoints(byName.get(mapping[key]) ?? new Map());
  return out;
}

/**
 * `svc.fleet.metrics.process` and `svc.fleet.metrics.container`: the fixed set of charts of one process (which also
 * needs processes:read) or one container of a host.
 */
export function processContainerHandlers({ deps, host }: MetricsReads): MetricsReadHandlers {
  return {
    'svc.fleet.metrics.process': async ({ id, pid, process_name, start, end }, { ctx, signal }) => {
      const h = await host(ctx, id);
      requireOnClient(ctx, h.client_id, 'processes:read', 'host');
      const b = bucketsOf(resolveRange({ start, end }, deps.clock.now()));
      const match = selector([
        ['__name__', '=~', names(PROCESS_METRICS)],
        ['host_id', '=', h.id],
        ['pid', '=', String(pid)],
        ['process_name', '=', process_name],
      ]);
      const byName = await gaugeBuckets(deps.tsdb, match, hostFilter(h), b, signal);
      return pointsOf(PROCESS_METRICS, byName);
    },

    'svc.fleet.metrics.container': async ({ id, container_id, start, end }, { ctx, signal }) => {
      const h = await host(ctx, id);
      const b = bucketsOf(resolveRange({ start, end }, deps.clock.now()));
      const of = (m: Record<string, string>): string =>
        selector([
          ['__name__', '=~', names(m)],
          ['host_id', '=', h.id],
          ['container_id', '=', container_id],
        ]);
      const [gauges, counters] = await Promise.all([
        gaugeBuckets(deps.tsdb, of(CONTAINER_GAUGES), hostFilter(h), b, signal),
        counterRateBuckets(deps.tsdb, of(CONTAINER_COUNTERS), hostFilter(h), b, signal),
      ]);
      return { ...pointsOf(CONTAINER_GAUGES, gauges), ...pointsOf(CONTAINER_COUNTERS, counters) };
    },
  };
}
