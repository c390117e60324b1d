import autocannon from 'autocannon';

export interface LoadResult {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Requests answered in all. */
  total: number;
  /** CPU milliseconds per request by process group, when the caller measured it (bench/cpu.ts). */
  cpu?: Record<string, number>;
  /** CPU milliseconds per request of one process's threads by kind, when the caller measured them (threadMeter). */
  threads?: Record<string, number>;
  /** Share of the machine's CPU time stolen by the hypervisor during the round (bench/cpu.ts stealMeter). */
  steal?: number;
}

/** Runs autocannon against one URL and returns throughput and latency percentiles (ms). */
export async function load(
  name: string,
  url: string,
  opts: {
    headers?: Record<string, string>;
    method?: 'GET' | 'POST';
    body?: string;
    bodies?: string[];
    connections?: number;
    seconds?: number;
  },
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
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}
