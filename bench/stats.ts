import type { LoadResult } from './load.ts';

/** A figure over several rounds: its mean and the spread (min–max) of the rounds. */
export interface Spread {
  mean: number;
  min: number;
  max: number;
}

export function spread(values: number[]): Spread {
  return {
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

export const fmt = (s: Spread, digits = 0): string =>
  `${s.mean.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;

/** Throughput and latency of one path over its rounds. */
export interface PathFigures {
  name: string;
  rps: Spread;
  p50: Spread;
  p99: Spread;
  errors: number;
  non2xx: number;
}

export function figures(rounds: LoadResult[]): PathFigures {
  return {
    name: rounds[0]!.name,
    rps: spread(rounds.map((r) => r.rps)),
    p50: spread(rounds.map((r) => r.p50)),
    p99: spread(rounds.map((r) => r.p99)),
    errors: rounds.reduce((a, r) => a + r.errors, 0),
    non2xx: rounds.reduce((a, r) => a + r.non2xx, 0),
  };
}

export function pathTable(rows: PathFigures[]): string {
  const head = ['path', 'req/s (min–max)', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'];
  const lines = rows.map((r) => [r.name, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), String(r.errors), String(r.non2xx)]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [line(head), ...lines.map(line)].join('\n');
}

/** Per-round ratios a/b (rounds were interleaved, so each pair ran under the same machine conditions). */
export const ratios = (a: LoadResult[], b: LoadResult[], f: (r: LoadResult) => number): Spread =>
  spread(a.map((r, i) => f(r) / f(b[i]!)));

export const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;

/** A share (0..1) as a percentage with its spread: `12% (8–17%)`. */
export const pct = (s: Spread): string =>
  `${(s.mean * 100).toFixed(0)}% (${(s.min * 100).toFixed(0)}–${(s.max * 100).toFixed(0)}%)`;

/** The hop part's paths whose system CPU per request takes the single process apart, in the order the steps add up. */
const HOP_STEPS = [
  ["the gateway's stack", 'noHop', 'direct'],
  ['a bare NATS hop inside it', 'bareHop', 'noHop'],
  ["the runtime's hop instead", 'runtimeHop', 'bareHop'],
  ["the rest of the system's process", 'single', 'runtimeHop'],
] as const;

/**
 * The single process's system CPU per request above bare Fastify, step by step: each step is a path's mean minus the
 * one before it. Undefined when a run lacks one of the paths (an older latest.json).
 */
export function hopSteps(
  cpu: Record<string, Record<string, Spread> | undefined> | undefined,
): { step: string; ms: number }[] | undefined {
  const of = (path: string): number | undefined => cpu?.[path]?.system?.mean;
  const steps = HOP_STEPS.map(([step, path, before]) => {
    const a = of(path);
    const b = of(before);
    return a === undefined || b === undefined ? undefined : { step, ms: a - b };
  });
  return steps.every((s) => s !== undefined) ? steps : undefined;
}
