import autocannon from 'autocannon';

export interface LoadResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Runs autocannon against one URL and returns throughput and latency percentiles (ms). */
export async function load(
  name: string,
  url: string,
  opts: { headers?: Record<string, string>; method?: 'GET' | 'POST'; body?: string; bodies?: string[]; connections?: number; seconds?: number },
): Promise<LoadResult> {
  let next = 0;
  const bodies = opts.bodies;
  const result = await autocannon({
    url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    // Rotate request bodies (e.g. several accounts) when given.
    ...(bodies ? { requests: [{ setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }) }] } : {}),
    connections: opts.connections ?? 32,
    duration: opts.seconds ?? 10,
  });
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
}

export function table(rows: LoadResult[]): string {
  const head = ['path', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'];
  const lines = rows.map((r) => [r.name, r.rps.toFixed(0), r.p50.toFixed(1), r.p99.toFixed(1), String(r.errors), String(r.non2xx)]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
  return [fmt(head), ...lines.map(fmt)].join('\n');
}

/** Mean of several rounds of the same path (interleaved rounds even out machine noise). */
export function mean(rows: LoadResult[]): LoadResult {
  const n = rows.length;
  const sum = (f: (r: LoadResult) => number) => rows.reduce((a, r) => a + f(r), 0);
  return { name: rows[0]!.name, rps: sum((r) => r.rps) / n, p50: sum((r) => r.p50) / n, p99: sum((r) => r.p99) / n, errors: sum((r) => r.errors), non2xx: sum((r) => r.non2xx) };
}
