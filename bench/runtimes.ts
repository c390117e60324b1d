// `npm run bench:runtimes [-- <part>...]`: the bench's parts on two Node.js runtimes side by side, in interleaved rounds
// on the same tree: the Node 24 the project pins (node_modules/.bin/node, sources run by type stripping) against an
// older runtime given by BENCH_OLD_NODE (default /usr/bin/node, the machine's Node 20, which needs tsx's loader:
// BENCH_OLD_NODE_OPTIONS, default `--import tsx`). Each round runs every part once on each runtime (the order
// alternates between rounds), each run with BENCH_ROUNDS=1, and keeps the part's headline figures from
// data/bench/latest.json. Prints, per figure, mean (min–max) over the rounds for each runtime and new / old.
// Not a test: nothing here fails a build.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const ALL = ['hop', 'runtime', 'login', 'resolve', 'invoice', 'metrics', 'fleet', 'search', 'events', 'servicedesk'];
const parts = process.argv.slice(2).length ? process.argv.slice(2) : ALL;
const rounds = Math.max(1, Number(process.env.BENCH_RUNTIME_ROUNDS ?? 3));
const oldNode = process.env.BENCH_OLD_NODE ?? '/usr/bin/node';
const oldOptions = process.env.BENCH_OLD_NODE_OPTIONS ?? '--import tsx';

interface Runtime {
  label: string;
  node: string;
  nodeOptions: string;
}
const version = (node: string): string => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
const runtimes: Runtime[] = [
  { label: `old ${version(oldNode)}`, node: oldNode, nodeOptions: oldOptions },
  { label: `new ${process.version}`, node: process.execPath, nodeOptions: '' },
];

/** Every numeric `mean` (or plain number) in a part's figures, by its path: `singleThroughputRatio`, `cpuPerRequest.single.system`. */
function flatten(value: unknown, prefix = '', out: Record<string, number> = {}): Record<string, number> {
  if (typeof value === 'number') out[prefix] = value;
  else if (Array.isArray(value)) value.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  else if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.mean === 'number' && typeof o.min === 'number') out[prefix] = o.mean;
    else for (const [k, v] of Object.entries(o)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  }
  return out;
}

/** The figures worth comparing per part: ratios, latencies, CPU per unit of work. */
const HEADLINES: Record<string, RegExp> = {
  hop: /^(single\.(rps|p99)|direct\.(rps|p99)|singleThroughputRatio|singleP99Ratio|singleToNoHopThroughputRatio|cpuPerRequest\..*)$/,
  runtime: /^(runtime|bare|extra)$/,
  login: /^(login\.(rps|p99)|raw|ratio)$/,
  resolve: /^((cold|warm|bare)\.(p50|p99)|warmCpuPerCall\.system)$/,
  invoice: /^(p50Ratio|p95Ratio|preview\.(p50|p99)|finalize\.p95|bulk\.seconds)$/,
  metrics: /^(ingest\.(ratio|pipeline|raw)|chart(6|24)h\.(p99Ratio|(gateway|direct)\.(p50|p99)))$/,
  fleet:
    /^(sizes\[\d+\]\.(lagMs\.(p50|p99)|cpuMsPerHeartbeat|cpuMsPer1000Samples|rssMiB|backlogSecondHalf)|cpuPerHeartbeatGrowth)$/,
  search: /^(superAdmin|engineer)\[\d+\]\.((count|page)\.p95|cpuMsPerRequest\.(system|postgres))$/,
  events:
    /^(receiver\.(rps|p99)|store\.perSecond|markerLag\.(p50|p99|cpuMsPerDelivery\.(system|postgres))|notes\.(p99|cpuMsPerCall\.(system|postgres)))$/,
  servicedesk: /^routes\..*\.((warm|cold)\.p95|cpuMsPerRequest\.(system|postgres))$/,
};

const stat = (xs: number[] | undefined): string => {
  if (!xs?.length) return '–';
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const digits = Math.abs(mean) >= 100 ? 0 : Math.abs(mean) >= 10 ? 1 : 2;
  return `${mean.toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;
};
const mean = (xs: number[] | undefined): number => (xs?.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const [oldRt, newRt] = runtimes as [Runtime, Runtime];
function printTable(done: number): void {
  console.log(
    `\n## Node runtimes side by side, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${done} of ${rounds} interleaved rounds per part\n`,
  );
  console.log(`| part | figure | ${oldRt.label} | ${newRt.label} | new / old |`);
  console.log('|---|---|---|---|---|');
  for (const part of parts) {
    for (const [figure, by] of Object.entries(got[part] ?? {})) {
      const ratio = mean(by[newRt.label]) / mean(by[oldRt.label]);
      console.log(
        `| ${part} | ${figure} | ${stat(by[oldRt.label])} | ${stat(by[newRt.label])} | ${Number.isFinite(ratio) ? ratio.toFixed(2) : '–'} |`,
      );
    }
  }
}

const got: Record<string, Record<string, Record<string, number[]>>> = {}; // part → figure → runtime label → values
for (let round = 0; round < rounds; round++) {
  for (const part of parts) {
    for (const rt of round % 2 === 0 ? runtimes : [...runtimes].reverse()) {
      console.log(`\n# round ${round + 1}/${rounds}: ${part} on ${rt.label}`);
      const res = spawnSync(rt.node, ['bench/run.ts', part], {
        stdio: 'inherit',
        env: {
          ...process.env,
          BENCH_ROUNDS: '1',
          // Load generators that are processes of their own (the fleet's simulated agents) run on the pinned Node.
          BENCH_AGENT_NODE: process.execPath,
          NODE_OPTIONS: [rt.nodeOptions, process.env.NODE_OPTIONS ?? ''].filter(Boolean).join(' '),
        },
      });
      if (res.status !== 0) {
        console.error(`${part} on ${rt.label} exited ${res.status}; its round is left out`);
        continue;
      }
      const latest = JSON.parse(readFileSync('data/bench/latest.json', 'utf8')) as Record<string, unknown>;
      const pattern = HEADLINES[part] ?? /./;
      for (const [figure, value] of Object.entries(flatten(latest[part]))) {
        if (!pattern.test(figure)) continue;
        ((got[part] ??= {})[figure] ??= {})[rt.label] ??= [];
        got[part]![figure]![rt.label]!.push(value);
      }
    }
  }
  // After every round, so an interrupted run still leaves its figures.
  printTable(round + 1);
}
