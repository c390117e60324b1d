import { DomainError } from '../../../contracts/errors.ts';
import type { PromQueryData, Tsdb } from './tsdb.ts';
import { tsdbFailure } from './tsdb-errors.ts';
import { counterBuckets, emptyAcc, type Acc, type Buckets, type RawSeries } from './buckets.ts';
import { promString } from './promql-guard.ts';

/**
 * The metric routes' reads from VictoriaMetrics. Every request carries one tenant selector as `extra_filters[]`
 * (`{client_id="…",host_id="…"}` for a host), which the server ANDs into every series selector: even a wrong
 * selector built here cannot reach another host's series. Every query runs with `nocache=1`: late samples (an
 * agent's outbox, a backlog replayed after an outage) show at once instead of behind a cached answer.
 */

export type Match = readonly [label: string, op: '=' | '=~' | '!=', value: string];

/** `{a="b",c=~"d|e"}`, values quoted for PromQL. */
export const selector = (matches: readonly Match[]): string =>
  `{${matches.map(([l, op, v]) => `${l}${op}${promString(v)}`).join(',')}}`;

/** The tenant selector of one host. */
export const hostFilter = (host: { id: string; client_id: string }): string =>
  selector([
    ['client_id', '=', host.client_id],
    ['host_id', '=', host.id],
  ]);

const seconds = (ms: number): number => ms / 1000;

/** Runs one store call; failures become the routes' errors (tsdb-errors.ts). */
export async function storeCall<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (err) {
    throw tsdbFailure(err) ?? err;
  }
}

/** The matrix (range query) or vector (instant query) of an answer; anything else is the store misbehaving. */
function resultOf(data: PromQueryData): GaugeSeries[] {
  if (data.resultType === 'matrix') return data.result;
  if (data.resultType === 'vector') return data.result.map((r) => ({ metric: r.metric, values: [r.value] }));
  throw new DomainError('bad_gateway', `the metrics store answered a ${data.resultType} where series were expected`);
}

const ROLLUPS = '("count_over_time","sum_over_time","min_over_time","max_over_time")';

/** One series of a gauge query's answer: its labels (with `rollup`) and its [seconds, value] points. */
export type GaugeSeries = { metric: Record<string, string>; values: [number, string][] };

/**
 * Count, sum, min and max of the raw samples of each bucket, per metric name, over every series `match` selects
 * (series of one labels_key under several environment labels — a host moved — are one series to the reader).
 * The point at t covers (t − size − 1ms, t − 1ms], i.e. exactly the bucket [t − size, t) in whole milliseconds.
 */
export async function gaugeBuckets(
  tsdb: Tsdb,
  match: string,
  filter: string,
  b: Buckets,
  signal: AbortSignal,
): Promise<Map<string, Map<number, Acc>>> {
  return accumulateGauges(await gaugeSeries(tsdb, match, filter, b, signal), b);
}

/** gaugeBuckets' query alone: its answer's series, for a caller that picks among them (accumulateGauges' `keep`). */
export async function gaugeSeries(
  tsdb: Tsdb,
  match: string,
  filter: string,
  b: Buckets,
  signal: AbortSignal,
): Promise<GaugeSeries[]> {
  const res = await storeCall(() =>
    tsdb.queryRange(
      {
        query: `aggr_over_time(${ROLLUPS}, ${match}[${b.sizeMs}ms] offset 1ms) keep_metric_names`,
        start: seconds(b.firstMs + b.sizeMs),
        end: seconds(b.lastMs + b.sizeMs),
        step: seconds(b.sizeMs),
        extraFilters: [filter],
        nocache: true,
      },
      signal,
    ),
  );
  return resultOf(res.data);
}

/** gaugeBuckets' figures from the series of its query; only those `keep` accepts, when given, count. */
export function accumulateGauges(
  series: readonly GaugeSeries[],
  b: Buckets,
  keep?: (metric: Record<string, string>) => boolean,
): Map<string, Map<number, Acc>> {
  const byName = new Map<string, Map<number, Acc>>();
  for (const r of series) {
    if (keep && !keep(r.metric)) continue;
    const name = r.metric.__name__ ?? '';
    let buckets = byName.get(name);
    if (!buckets) byName.set(name, (buckets = new Map()));
    for (const [t, raw] of r.values) {
      const v = Number(raw);
      if (!Number.isFinite(v)) continue;
      const bucket = Math.round(t * 1000) - b.sizeMs;
      let acc = buckets.get(bucket);
      if (!acc) buckets.set(bucket, (acc = emptyAcc()));
      switch (r.metric.rollup) {
        case 'count_over_time':
          acc.count += v;
          break;
        case 'sum_over_time':
          acc.sum += v;
          break;
        case 'min_over_time':
          acc.min = Math.min(acc.min, v);
          break;
        case 'max_over_time':
          acc.max = Math.max(acc.max, v);
          break;
        default:
          break;
      }
    }
  }
  return byName;
}

/**
 * Per-second rates of cumulative counters, per metric name (buckets.ts counterBuckets), from the raw samples:
 * exported from one bucket (at least 5 minutes) before the first, so the first bucket's first rate has its predecessor.
 */
export async function counterRateBuckets(
  tsdb: Tsdb,
  match: string,
  filter: string,
  b: Buckets,
  signal: AbortSignal,
): Promise<Map<string, Map<number, Acc>>> {
  const lookbackMs = Math.max(b.sizeMs, 5 * 60_000);
  const rows = await storeCall(() =>
    tsdb.export([match], {
      start: seconds(b.firstMs - lookbackMs),
      end: seconds(b.lastMs + b.sizeMs - 1),
      extraFilters: [filter],
      signal,
    }),
  );
  // An export may split one series over several lines: gather them per series, then per metric name.
  const bySeries = new Map<string, { name: string; raw: RawSeries }>();
  for (const row of rows) {
    const key = JSON.stringify(Object.entries(row.metric).sort(([a], [c]) => (a < c ? -1 : 1)));
    let s = bySeries.get(key);
    if (!s) bySeries.set(key, (s = { name: row.metric.__name__, raw: { values: [], timestamps: [] } }));
    s.raw.values.push(...row.values);
    s.raw.timestamps.push(...row.timestamps);
  }
  const byName = new Map<string, Map<number, Acc>>();
  for (const { name, raw } of bySeries.values()) {
    let buckets = byName.get(name);
    if (!buckets) byName.set(name, (buckets = new Map()));
    counterBuckets([raw], b, buckets);
  }
  return byName;
}

/** Newest value and its time of each series `match` selects, looking back `windowMs` from `atMs`. */
export async function latestValues(
  tsdb: Tsdb,
  match: string,
  filter: string,
  atMs: number,
  windowMs: number,
  signal: AbortSignal,
): Promise<{ metric: Record<string, string>; value: number; timeMs: number }[]> {
  const res = await storeCall(() =>
    tsdb.query(
      {
        query: `aggr_over_time(("last_over_time","tlast_over_time"), ${match}[${windowMs}ms]) keep_metric_names`,
        time: seconds(atMs),
        extraFilters: [filter],
        nocache: true,
      },
      signal,
    ),
  );
  // The two rollups of one series share its labels: pair them by the labels without `rollup`.
  const bySeries = new Map<string, { metric: Record<string, string>; value?: number; timeMs?: number }>();
  for (const r of resultOf(res.data)) {
    const { rollup, ...metric } = r.metric;
    const key = JSON.stringify(Object.entries(metric).sort(([a], [c]) => (a < c ? -1 : 1)));
    let s = bySeries.get(key);
    if (!s) bySeries.set(key, (s = { metric }));
    const v = Number(r.values[0]?.[1]);
    if (rollup === 'last_over_time') s.value = v;
    else if (rollup === 'tlast_over_time') s.timeMs = Math.round(v * 1000);
  }
  return [...bySeries.values()].filter(
    (s): s is { metric: Record<string, string>; value: number; timeMs: number } =>
      Number.isFinite(s.value) && Number.isFinite(s.timeMs),
  );
}
