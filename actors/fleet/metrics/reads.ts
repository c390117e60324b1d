import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { hasPermission, requirePermission } from '../../../contracts/access.ts';
import type { Cat } from '../../../contracts/catalogue.ts';
import {
  CONTAINER_COUNTERS,
  CONTAINER_GAUGES,
  LATEST_LIMITS,
  PROCESS_METRICS,
  type LatestValue,
  type MetricPoint,
} from '../../../contracts/domains/fleet-metrics.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { Tsdb } from './tsdb.ts';
import { loadHost, requireOnClient } from '../scope.ts';
import { HostScopes, type HostScope } from './host-scopes.ts';
import { bucketsOf, resolveRange, toPoints, type Acc } from './buckets.ts';
import { LabelsKeyError, labelsKeyOf, ownLabels, parseLabelsKey } from './labels-key.ts';
import { LabelNamesCache } from './label-names.ts';
import {
  accumulateGauges,
  counterRateBuckets,
  gaugeBuckets,
  gaugeSeries,
  hostFilter,
  latestValues,
  selector,
  storeCall,
  type GaugeSeries,
  type Match,
} from './store-reads.ts';

/**
 * The metric routes (console-operations.md, "Metrics" and the process and container metric routes). Each needs
 * metrics:read on the host's client (the process route also processes:read): a host out of reach is 404, in reach
 * without the permission 403. Reads go to VictoriaMetrics confined to the host (store-reads.ts).
 */

export interface MetricsReadDeps {
  orm: MikroORM;
  tsdb: Tsdb;
  clock: Clock;
  /** Shared by the handlers of one actor; tests may pass their own. */
  labelNames?: LabelNamesCache;
  /** Shared with the host handlers, which forget the hosts they delete. */
  hostScopes?: HostScopes;
}

const PERMISSION = 'metrics:read';
/** How far back the name and labels_key listings look: the longest range a chart may show. */
const LISTING_WINDOW_MS = 31 * 86_400_000;

const names = (m: Record<string, string>): string => Object.values(m).join('|');

export function metricsReadHandlers(deps: MetricsReadDeps): Handlers<Cat, 'fleet'> {
  const fork = (): EntityManager => deps.orm.em.fork();
  const labelNames = deps.labelNames ?? new LabelNamesCache();
  const scopes = deps.hostScopes ?? new HostScopes();
  /** The host, 404 out of the caller's reach and 403 without metrics:read, its row read only when not kept. */
  const host = async (ctx: Parameters<typeof loadHost>[1], id: string): Promise<HostScope> => {
    const kept = scopes.get(id);
    if (kept) {
      requireOnClient(ctx, kept.client_id, PERMISSION, 'host');
      return kept;
    }
    const mark = scopes.mark;
    const row = await loadHost(fork(), ctx, id, PERMISSION);
    scopes.set(row, mark);
    return row;
  };

  return {
    'svc.fleet.metrics.names': async ({ id }, { ctx, signal }) => {
      const h = await host(ctx, id);
      const now = deps.clock.now();
      const found = await storeCall(() =>
        deps.tsdb.labelValues('__name__', [selector([['host_id', '=', h.id]])], {
          start: (now - LISTING_WINDOW_MS) / 1000,
          end: now / 1000,
          extraFilters: [hostFilter(h)],
          signal,
        }),
      );
      return [...new Set(found)].sort();
    },

    'svc.fleet.metrics.series': async ({ id, metric }, { ctx, signal }) => {
      const h = await host(ctx, id);
      const now = deps.clock.now();
      const series = await storeCall(() =>
        deps.tsdb.series(
          [
            selector([
              ['__name__', '=', metric],
              ['host_id', '=', h.id],
            ]),
          ],
          (now - LISTING_WINDOW_MS) / 1000,
          now / 1000,
          [hostFilter(h)],
          signal,
        ),
      );
      return [...new Set(series.map(labelsKeyOf))].sort();
    },

    'svc.fleet.metrics.points': async ({ id, metric, start, end, labels_key }, { ctx, signal }) => {
      let wanted: Record<string, string>;
      try {
        wanted = parseLabelsKey(labels_key);
      } catch (err) {
        if (err instanceof LabelsKeyError) throw new DomainError('bad_request', err.message);
        throw err;
      }
      const b = bucketsOf(resolveRange({ start, end }, deps.clock.now()));
      const key = labelsKeyOf(wanted);
      const base: Match[] = [
        ['__name__', '=', metric],
        ['host_id', '=', id],
      ];
      // A selector matches supersets of its labels too: the label names other series of this metric carry are
      // required empty, so (nearly) only the series of this labels_key is read.
      const exactOf = (names: ReadonlySet<string>): string =>
        selector([
          ...base,
          ...Object.entries(wanted).map(([l, v]): Match => [l, '=', v]),
          ...[...names]
            .filter((l) => !Object.hasOwn(wanted, l))
            .sort()
            .map((l): Match => [l, '=', '']),
        ]);
      // Until the host's row says its client, the store is asked for the host's series only; the answer is used only
      // once the host is authorized, and only its series of the host's client (`keep` below).
      const ofHost = selector([['host_id', '=', id]]);
      const known = labelNames.get(id, metric);
      let h: HostScope;
      let answer: GaugeSeries[];
      if (known) {
        // The names are known: the host's authorization and the chart's query run at once (one round trip).
        const [authorized, queried] = await Promise.allSettled([
          host(ctx, id),
          gaugeSeries(deps.tsdb, exactOf(known), ofHost, b, signal),
        ]);
        // The host's 404/403 first, whatever the store did meanwhile.
        if (authorized.status === 'rejected') throw authorized.reason;
        if (queried.status === 'rejected') throw queried.reason;
        h = authorized.value;
        answer = queried.value;
      } else {
        // Otherwise the store's index says them, beside the host's authorization, and the query follows.
        const [authorized, lookup] = await Promise.allSettled([
          host(ctx, id),
          storeCall(() =>
            deps.tsdb.series([selector(base)], b.firstMs / 1000, (b.lastMs + b.sizeMs) / 1000, [ofHost], signal),
          ),
        ]);
        if (authorized.status === 'rejected') throw authorized.reason;
        if (lookup.status === 'rejected') throw lookup.reason;
        h = authorized.value;
        const series = lookup.value.filter((s) => s.client_id === h.client_id);
        const names = new Set(series.flatMap((s) => Object.keys(ownLabels(s))));
        labelNames.set(id, metric, names);
        if (!series.some((s) => labelsKeyOf(s) === key)) return [];
        answer = await gaugeSeries(deps.tsdb, exactOf(names), hostFilter(h), b, signal);
      }
      // Exactly the wanted series count, whatever the selector let through (a label name new since the names were
      // learnt); the names seen are learnt for the next chart.
      const seen = new Set<string>();
      const byName = accumulateGauges(answer, b, (m) => {
        if (m.client_id !== h.client_id) return false;
        const { rollup: _rollup, ...labels } = m;
        const own = ownLabels(labels);
        for (const n of Object.keys(own)) seen.add(n);
        return labelsKeyOf(own) === key;
      });
      labelNames.learn(id, metric, seen);
      return toPoints(byName.get(metric) ?? new Map());
    },

    'svc.fleet.metrics.latest': async ({ host_ids, metrics }, { ctx, signal }) => {
      // 403 like every other metric route for a caller who may read metrics nowhere; a holder somewhere gets the
      // silent filtering below, which never tells which of the ids exist.
      requirePermission(ctx, PERMISSION);
      const rows = await sql<{ id: string; client_id: string }>(
        fork(),
        'SELECT id, client_id FROM hosts WHERE id IN (?)',
        [[...new Set(host_ids)]],
      );
      // Out of reach, without metrics:read, or unknown: such hosts simply answer nothing.
      const readable = rows.filter((r) => hasPermission(ctx, PERMISSION, r.client_id));
      if (readable.length === 0) return [];
      const now = deps.clock.now();
      const filter = selector([
        ['client_id', '=~', [...new Set(readable.map((r) => r.client_id))].join('|')],
        ['host_id', '=~', readable.map((r) => r.id).join('|')],
      ]);
      const wantedNames = [...new Set(metrics)];
      // Several queries when the names would make one longer than the store accepts (16 KB by default).
      const chunks: string[][] = [[]];
      let length = 0;
      for (const n of wantedNames) {
        if (length + n.length > 4_000 && chunks.at(-1)!.length > 0) {
          chunks.push([]);
          length = 0;
        }
        chunks.at(-1)!.push(n);
        length += n.length + 1;
      }
      const answers = await Promise.all(
        chunks.map((chunk) =>
          latestValues(
            deps.tsdb,
            selector([
              ['__name__', '=~', chunk.join('|')],
              ['host_id', '=~', readable.map((r) => r.id).join('|')],
            ]),
            filter,
            now,
            LATEST_LIMITS.windowMinutes * 60_000,
            signal,
          ),
        ),
      );
      // The unlabelled series of each metric (the value the host as a whole reports); the newest if a host moved and
      // has it under two environments.
      const newest = new Map<string, LatestValue & { timeMs: number }>();
      for (const s of answers.flat()) {
        if (Object.keys(ownLabels(s.metric)).length > 0) continue;
        const hostId = s.metric.host_id ?? '';
        const name = s.metric.__name__ ?? '';
        const key = `${hostId} ${name}`;
        const seen = newest.get(key);
        if (!seen || s.timeMs > seen.timeMs)
          newest.set(key, {
            host_id: hostId,
            metric_name: name,
            value: s.value,
            time: new Date(s.timeMs).toISOString(),
            timeMs: s.timeMs,
          });
      }
      const order = new Map(host_ids.map((h, i) => [h, i]));
      return [...newest.values()]
        .sort(
          (a, b) =>
            order.get(a.host_id)! - order.get(b.host_id)! ||
            (a.metric_name < b.metric_name ? -1 : a.metric_name > b.metric_name ? 1 : 0),
        )
        .map(({ timeMs: _t, ...v }) => v);
    },

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

/** `{cpu_usage: points, …}` from buckets keyed by stored metric name. */
function pointsOf<K extends string>(
  mapping: Record<K, string>,
  byName: Map<string, Map<number, Acc>>,
): Record<K, MetricPoint[]> {
  const out = {} as Record<K, MetricPoint[]>;
  for (const key of Object.keys(mapping) as K[]) out[key] = toPoints(byName.get(mapping[key]) ?? new Map());
  return out;
}
