// The `memory` part of the bench: the resident memory of `npm start`'s single process once idle (BENCH_MEMORY_SECONDS
// after it is ready, default 60), in three shapes started side by side each round: the whole system as `npm start`
// runs it (chDB in-process), the same with the analytics on a ClickHouse server (SVC_CLICKHOUSE_URL: libchdb never
// loaded), and that without the invoice domain (SVC_ACTORS without invoice: no PDF renderer, no invoice actors). Chromium
// itself starts on the first PDF, so an idle system has none; the processes' children are counted all the same.
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { allPids, memoryMiB, parentOf } from './proc.ts';
import { spread, type Spread } from './stats.ts';

export interface MemoryBenchDeps {
  start: (args: string[], env: Record<string, string>, readyUrl: string) => Promise<ChildProcess>;
  /** Removes the durable consumers a namespace's processes made (their streams keep filling them otherwise). */
  dropNamespace: (namespace: string) => Promise<void>;
  namespace: string;
  rounds: number;
}

export interface MemoryVariantFigures {
  name: string;
  /** The process alone: resident, and its anonymous and file-backed parts (/proc/<pid>/status), MiB. */
  rssMiB: Spread;
  anonMiB: Spread;
  fileMiB: Spread;
  /** Every descendant process's RSS summed (Chromium, once a PDF has been rendered), MiB. */
  childrenMiB: Spread;
}
export interface MemoryFigures {
  idleSeconds: number;
  variants: MemoryVariantFigures[];
}

const FIRST_PORT = 18090;
const ANALYTICS_PATH = 'data/bench/memory-analytics';
const ALL_BUT_INVOICE = 'identity,fleet,servicedesk,events';

/** The process alone: resident, anonymous, and file-backed (shared memory counted with it, as mapped files). */
function statusMiB(pid: number): { rss: number; anon: number; file: number } {
  const m = memoryMiB(pid);
  if (!m) throw new Error(`process ${pid} has ended`);
  return { rss: m.rss, anon: m.anon, file: m.file + m.shmem };
}

/** The RSS of every process below `pid`, summed. */
function descendantsMiB(pid: number): number {
  const parents = new Map<number, number>();
  for (const p of allPids()) {
    const parent = parentOf(p);
    if (parent !== undefined) parents.set(p, parent);
  }
  let total = 0;
  const below = (p: number): void => {
    for (const [child, parent] of parents) {
      if (parent !== p) continue;
      total += memoryMiB(child)?.rss ?? 0; // 0: gone meanwhile
      below(child);
    }
  };
  below(pid);
  return total;
}

/**
 * Stands in for a ClickHouse server at start-up: the invoice domain applies its DDL through the HTTP interface
 * (answered 200, as ClickHouse answers a successful command), and an idle system sends nothing else.
 */
async function clickHouseStandIn(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain; charset=UTF-8' }).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function memoryBench(deps: MemoryBenchDeps): Promise<MemoryFigures> {
  const idleSeconds = Number(process.env.BENCH_MEMORY_SECONDS ?? 60);
  const clickHouse = await clickHouseStandIn();
  const variants: { name: string; env: Record<string, string> }[] = [
    { name: '`npm start` as it is: every domain, chDB in-process', env: { SVC_ANALYTICS_PATH: ANALYTICS_PATH } },
    {
      name: 'analytics on a ClickHouse server (`SVC_CLICKHOUSE_URL`): no chDB',
      env: { SVC_CLICKHOUSE_URL: clickHouse.url },
    },
    {
      name: `no chDB and no invoice domain (\`SVC_ACTORS=${ALL_BUT_INVOICE}\`): no Chromium`,
      env: { SVC_CLICKHOUSE_URL: clickHouse.url, SVC_ACTORS: ALL_BUT_INVOICE },
    },
  ];
  const samples = variants.map(() => ({
    rss: [] as number[],
    anon: [] as number[],
    file: [] as number[],
    children: [] as number[],
  }));
  try {
    for (let round = 0; round < deps.rounds; round++) {
      await rm(ANALYTICS_PATH, { recursive: true, force: true });
      for (let i = 0; i < variants.length; i++) await deps.dropNamespace(`${deps.namespace}-mem${i}`);
      const started = await Promise.all(
        variants.map(async (v, i) => {
          const port = FIRST_PORT + 2 * i;
          const namespace = `${deps.namespace}-mem${i}`;
          const child = await deps.start(
            ['main.ts'],
            {
              SVC_ACTORS: 'all',
              SVC_GATEWAYS: 'console,invoicing',
              SVC_SERVER_PORT: String(port),
              SVC_INVOICING_PORT: String(port + 1),
              SVC_NAMESPACE: namespace,
              ...v.env,
            },
            `http://127.0.0.1:${port}/readyz`,
          );
          return { child, namespace };
        }),
      );
      await new Promise((r) => setTimeout(r, idleSeconds * 1000));
      started.forEach(({ child }, i) => {
        const m = statusMiB(child.pid!);
        samples[i]!.rss.push(m.rss);
        samples[i]!.anon.push(m.anon);
        samples[i]!.file.push(m.file);
        samples[i]!.children.push(descendantsMiB(child.pid!));
      });
      await Promise.all(
        started.map(async ({ child }) => {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          if (child.exitCode === null && child.signalCode === null) await exited;
        }),
      );
      for (const { namespace } of started) await deps.dropNamespace(namespace);
      console.log(
        `memory round ${round + 1}: ${started.map((_, i) => `${samples[i]!.rss.at(-1)!.toFixed(0)} MiB`).join(', ')}`,
      );
    }
  } finally {
    clickHouse.server.close();
  }
  const figures: MemoryFigures = {
    idleSeconds,
    variants: variants.map((v, i) => ({
      name: v.name,
      rssMiB: spread(samples[i]!.rss),
      anonMiB: spread(samples[i]!.anon),
      fileMiB: spread(samples[i]!.file),
      childrenMiB: spread(samples[i]!.children),
    })),
  };
  console.log(`\n## idle RSS of the single process, ${idleSeconds} s after it is ready (${deps.rounds} rounds)`);
  for (const v of figures.variants)
    console.log(
      `${v.name}: ${v.rssMiB.mean.toFixed(0)} MiB (${v.rssMiB.min.toFixed(0)}–${v.rssMiB.max.toFixed(0)}): anonymous ${v.anonMiB.mean.toFixed(0)}, file-backed ${v.fileMiB.mean.toFixed(0)}; children ${v.childrenMiB.mean.toFixed(0)} MiB`,
    );
  return figures;
}
