/** A chart's points from the API's buckets: seconds for uPlot, and per-second rates for counters. */
export interface Bucket {
  time: string;
  avg_value: number;
}

export function toSeries(buckets: Bucket[], counter: boolean): [number[], (number | null)[]] {
  const xs = buckets.map((b) => Date.parse(b.time) / 1000);
  if (!counter) return [xs, buckets.map((b) => b.avg_value)];
  // A counter's level means little on a chart: its rise per second between buckets does (a reset reads as a gap).
  const ys: (number | null)[] = buckets.map((b, i) => {
    if (i === 0) return null;
    const dt = xs[i]! - xs[i - 1]!;
    const dv = b.avg_value - buckets[i - 1]!.avg_value;
    return dt > 0 && dv >= 0 ? dv / dt : null;
  });
  return [xs, ys];
}

/** The chart ranges offered, and the window each covers. */
export const RANGES = { '1h': 3_600_000, '6h': 21_600_000, '24h': 86_400_000, '7d': 604_800_000 } as const;
export type RangeKey = keyof typeof RANGES;

/** The series a labelled chart shows: the first one, but a real network interface before loopback. */
export function preferredSeries(keys: readonly string[] | undefined): string | undefined {
  if (!keys) return undefined;
  return keys.find((k) => !/(^|,)interface=lo(,|$)/.test(k)) ?? keys[0];
}
