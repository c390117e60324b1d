// The `runtime` part of `npm run bench` (`npm run bench -- runtime`): the CPU one request-reply costs this process
// through the runtime (Caller → NATS → ActorHost, signed envelope, headers, input schema, deadline, the reply forwarded
// as a page) against a bare nats.js request-reply carrying the same JSON both ways, in one process, with no HTTP and
// no store: the handler answers a fixed page of 20 clients. The difference is the runtime's own share of the hop.
import { randomUUID } from 'node:crypto';
import type { Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import { connectNats } from '../platform/nats.ts';
import { wireRequestSubject } from '../platform/namespace.ts';
import { ActorHost } from '../platform/serve.ts';
import { contextSigner } from '../platform/signing.ts';
import { catalogue } from '../contracts/catalogue.ts';
import { benchContext } from './fixtures.ts';
import { spread, type Spread } from './stats.ts';

export interface RuntimeFigures {
  /** CPU µs of this process per request-reply. */
  runtime: Spread;
  bare: Spread;
  /** runtime − bare, per round. */
  extra: Spread;
  concurrency: number;
}

export async function runtimeBench(deps: {
  config: Config;
  log: Logger;
  rounds: number;
  seconds: number;
}): Promise<RuntimeFigures> {
  const nc = await connectNats(
    deps.config.SVC_NATS_URL,
    'bench-runtime',
    deps.log,
    deps.config.SVC_NATS_CREDS,
    deps.config.SVC_NATS_CA,
  );
  // Replies are not checked against their schemas, as in production (SVC_VALIDATE_REPLIES=false).
  const host = new ActorHost(nc, catalogue, contextSigner(deps.config), deps.log, 10_000, false);
  try {
    const now = new Date().toISOString();
    const items = Array.from({ length: 20 }, (_, i) => ({
      id: randomUUID(),
      name: `Bench ${i}`,
      slug: `bench-${i}`,
      created_at: now,
      updated_at: now,
    }));
    const page = { items, total: 60, page: 1, per_page: 20 };
    await host.serve('fleet', 'bench-runtime', { 'svc.fleet.clients.list': async () => page as never });
    const bareSubject = wireRequestSubject('svc.bench.runtime.bare');
    nc.subscribe(bareSubject, {
      queue: 'bench-runtime',
      callback: (_e, m) => {
        m.json();
        m.respond(
          JSON.stringify({ data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } }),
        );
      },
    });
    await nc.flush();
    const ctx = benchContext;
    const input = { page: 1, per_page: 20, sort: 'name', order: 'asc' } as const;
    const paths = {
      runtime: (): Promise<unknown> =>
        host.caller.callForwardedPage('svc.fleet.clients.list', input, ctx(), { timeoutMs: 5000 }),
      bare: (): Promise<unknown> => nc.request(bareSubject, JSON.stringify({ ctx: ctx(), input }), { timeout: 5000 }),
    };
    const concurrency = 32;
    const cpuPerCall = async (f: () => Promise<unknown>, ms: number): Promise<number> => {
      let n = 0;
      const end = performance.now() + ms;
      const c0 = process.cpuUsage();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (performance.now() < end) {
            await f();
            n++;
          }
        }),
      );
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / n;
    };
    await cpuPerCall(paths.runtime, 2000);
    await cpuPerCall(paths.bare, 2000);
    const got = { runtime: [] as number[], bare: [] as number[] };
    // More, shorter rounds than the HTTP parts: each is a few seconds of one process, and the spread shows the noise.
    for (let r = 0; r < deps.rounds * 2; r++) {
      for (const k of r % 2 === 0 ? (['runtime', 'bare'] as const) : (['bare', 'runtime'] as const))
        got[k].push(await cpuPerCall(paths[k], (deps.seconds * 1000) / 2));
    }
    const figures = {
      runtime: spread(got.runtime),
      bare: spread(got.bare),
      extra: spread(got.runtime.map((x, i) => x - got.bare[i]!)),
      concurrency,
    };
    const f = (s: Spread): string => `${s.mean.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
    console.log(
      `\n## runtime: CPU µs of one process per request-reply, ${concurrency} in flight, ${got.runtime.length} interleaved rounds of ${deps.seconds / 2}s`,
    );
    console.log(
      `Caller → NATS → ActorHost (signed envelope, headers, schema, deadline, page forwarded): ${f(figures.runtime)}`,
    );
    console.log(
      `bare nats.js request-reply, same JSON both ways: ${f(figures.bare)}   runtime − bare: ${f(figures.extra)}`,
    );
    return figures;
  } finally {
    await host.drain(1000);
    await nc.drain().catch(() => undefined);
  }
}
