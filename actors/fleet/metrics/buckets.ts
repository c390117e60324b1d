import type { MetricPoint } from '../../../contracts/domains/fleet-metrics.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { isoUtc } from '../../../platform/iso-time.ts';

/**
 * Time ranges and buckets of the metric charts (docs/api/metrics.md#buckets-charts-process-and-container-routes):
 * ranges up to 6 hours give 1-minute buckets, longer ranges hourly aggregates. Buckets are fixed UTC intervals [t, t + size) aligned to the epoch, so a bucket's
 * figures never depend on the range asked for: a chart shows every bucket from the one holding `start` to the one
 * holding `end` that has samples, each computed from all raw samples inside it.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const SIX_HOURS_MS = 6 * HOUR_MS;
export const MAX_RANGE_MS = 31 * 24 * HOUR_MS;
export const DEFAULT_RANGE_MS = HOUR_MS;

export interface TimeRange {
  startMs: number;
  endMs: number;
}

/** `start` default one hour before `end`, `end` default now; 400 when start is after end or the range exceeds 31 days. */
export function resolveRange(q: { start?: string | undefined; end?: string | undefined }, nowMs: number): TimeRange {
  const endMs = q.end !== undefined ? Date.parse(q.end) : nowMs;
  const startMs = q.start !== undefined ? Date.parse(q.start) : endMs - DEFAULT_RANGE_MS;
  if (startMs < 0) throw new DomainError('bad_request', 'start must not be before 1970-01-01T00:00:00Z');
  if (startMs > endMs) throw new DomainError('bad_request', 'start must not be after end');
  if (endMs - startMs > MAX_RANGE_MS)
    throw new DomainError('bad_request', 'the range from start to end may span at most 31 days');
  return { startMs, endMs };
}

/** Up to 6 hours inclusive: 1-minute buckets; longer: hourly. */
export const bucketSizeMs = (r: TimeRange): number => (r.endMs - r.startMs <= SIX_HOURS_MS ? MINUTE_MS : HOUR_MS);

export interface Buckets {
  sizeMs: number;
  /** Start of the bucket holding the range's start. */
  firstMs: number;
  /** Start of the bucket holding the range's end. */
  lastMs: number;
}

export function bucketsOf(r: TimeRange): Buckets {
  const sizeMs = bucketSizeMs(r);
  return { sizeMs, firstMs: Math.floor(r.startMs / sizeMs) * sizeMs, lastMs: Math.floor(r.endMs / sizeMs) * sizeMs };
}

/** Running figures of one bucket; `sum` is the sum of values (gauges) or of increases (counters). */
export interface Acc {
  count: number;
  sum: number;
  min: number;
  max: number;
  /** Counters: seconds the increases span (the average is then sum / seconds). */
  seconds?: number;
}

export const emptyAcc = (): Acc => ({ count: 0, sum: 0, min: Infinity, max: -Infinity });

export function mergeAcc(into: Acc, other: Acc): void {
  into.count += other.count;
  into.sum += other.sum;
  into.min = Math.min(into.min, other.min);
  into.max = Math.max(into.max, other.max);
  if (other.seconds !== undefined) into.seconds = (into.seconds ?? 0) + other.seconds;
}

/** Accumulated buckets (keyed by bucket start, ms) as metric data points, oldest first. */
export function toPoints(buckets: Map<number, Acc>): MetricPoint[] {
  // A 6-hour chart has 361 points: plain loops and isoUtc, not Date per point (which cost more than the rest).
  const times: number[] = [];
  for (const [t, a] of buckets) if (a.count > 0) times.push(t);
  times.sort((a, b) => a - b);
  const points = new Array<MetricPoint>(times.length);
  for (let i = 0; i < times.length; i++) {
    const t = times[i]!;
    const a = buckets.get(t)!;
    points[i] = {
      time: isoUtc(t),
      avg_value: a.seconds !== undefined ? (a.seconds > 0 ? a.sum / a.seconds : 0) : a.sum / a.count,
      min_value: a.min,
      max_value: a.max,
      sample_count: a.count,
    };
  }
  return points;
}

/** Raw samples of one counter series, timestamps in ms (any order, duplicates allowed). */
export interface RawSeries {
  values: number[];
  timestamps: number[];
}

/**
 * Per-second rates of a cumulative counter, bucketed: each pair of consecutive raw samples gives one rate,
 * (v₂ − v₁) / (t₂ − t₁), counted in the bucket of the later sample. A value below its predecessor is a counter reset
 * (the process or container restarted and counted from zero), so the increase is the new value itself. A bucket's
 * average is its increases over the seconds they span (time-weighted), min and max are the extreme single rates and
 * sample_count the number of rates. The caller fetches the samples from one bucket before the first, so the first
 * bucket's earliest rate has its predecessor.
 */
export function counterBuckets(series: RawSeries[], b: Buckets, into: Map<number, Acc> = new Map()): Map<number, Acc> {
  for (const s of series) {
    const order = s.timestamps.map((t, i) => [t, s.values[i]!] as const).sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < order.length; i++) {
      const [t0, v0] = order[i - 1]!;
      const [t1, v1] = order[i]!;
      if (t1 <= t0) continue;
      const bucket = Math.floor(t1 / b.sizeMs) * b.sizeMs;
      if (bucket < b.firstMs || bucket > b.lastMs) continue;
      const increase = v1 >= v0 ? v1 - v0 : v1;
      const seconds = (t1 - t0) / 1000;
      const rate = increase / seconds;
      let acc = into.get(bucket);
      if (!acc) into.set(bucket, (acc = { ...emptyAcc(), seconds: 0 }));
      acc.count++;
      acc.sum += increase;
      acc.seconds = (acc.seconds ?? 0) + seconds;
      acc.min = Math.min(acc.min, rate);
      acc.max = Math.max(acc.max, rate);
    }
  }
  return into;
}
