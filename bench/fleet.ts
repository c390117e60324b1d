// The fleet part of `npm run bench` (`npm run bench -- fleet`): a scaling curve of 500, 1,000 and 2,000 simulated agents
// (BENCH_FLEET_SIZES; heartbeat and metrics every 10 s, an inventory snapshot every 5 minutes), each size against a
// fresh ingesting process: sustained ingest rate, the process's CPU per heartbeat and per 1,000 samples, backlog, the
// lag from publish to visible through the API, and the process's memory.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { busyMeter, cpuMeter } from './cpu.ts';
import { cpuTicks, memoryMiB, TICKS_PER_SECOND } from './proc.ts';
import { EVENTS_DURABLE, HEARTBEAT_DURABLE } from '../actors/fleet/agents/status.ts';
import { INVENTORY_DURABLE } from '../actors/fleet/inventory/ingest.ts';
import { METRICS_DURABLE } from '../actors/fleet/metrics/ingest.ts';
import { enrollAgent, enrollSimulated, readAgentState, readBrokerCa, statePaths } from '../agent/index.ts';
import { tsdbBases, type Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import { wireDurableName } from '../platform/namespace.ts';
import { brokerTls } from '../platform/nats.ts';
import type { Stores } from '../platform/stores/index.ts';
import { telemetrySubject } from '../contracts/streams.ts';
import { benchInstallTokens, freshBenchClient } from './fixtures.ts';
import { percentile, spread, type Spread } from './stats.ts';

export const FLEET_PORT = 18083;
const STATE_DIR = 'data/bench/fleet-agents';
const PROBES = 5;
const DURABLES = [HEARTBEAT_DURABLE, INVENTORY_DURABLE, METRICS_DURABLE, EVENTS_DURABLE];

export interface FleetBenchDeps {
  config: Config;
  stores: Stores;
  token: string;
  log: Logger;
  start: (args: string[], env: Record<string, string>, readyUrl: string) => Promise<ChildProcess>;
  env: Record<string, string>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const encoder = new TextEncoder();

/** CPU seconds (user + system) a process has used so far. */
const cpuSeconds = (pid: number): number => (cpuTicks(pid) ?? Number.NaN) / TICKS_PER_SECOND;

/** Pending work of the fleet's telemetry consumers (not yet delivered + delivered but unacknowledged). */
async function backlog(
  jsm: JetStreamManager,
): Promise<{ pending: number; acked: Record<string, number>; byConsumer: Record<string, number> }> {
  let pending = 0;
  const acked: Record<string, number> = {};
  const byConsumer: Record<string, number> = {};
  for (const d of DURABLES) {
    try {
      const info = await jsm.consumers.info('SVC_TELEMETRY', wireDurableName(d));
      byConsumer[d.replace('fleet-telemetry-', '')] = info.num_pending + info.num_ack_pending;
      pending += info.num_pending + info.num_ack_pending;
      // Consumer sequence: counts this durable's own messages (the stream sequence counts every kind).
      acked[d] = info.ack_floor.consumer_seq;
    } catch {
      acked[d] = 0;
    }
  }
  return { pending, acked, byConsumer };
}

/** The probes' lags as p50, p99 and max (NaN without a probe), and how many there were. */
function lagFigures(lags: number[]): { p50: number; p99: number; max: number; samples: number } {
  const sorted = [...lags].sort((a, b) => a - b);
  return {
    p50: sorted.length ? percentile(sorted, 50) : Number.NaN,
    p99: sorted.length ? percentile(sorted, 99) : Number.NaN,
    max: Math.max(0, ...lags),
    samples: lags.length,
  };
}

export interface FleetFigures {
  agents: number;
  measureSeconds: number;
  messagesPerSecond: Record<string, number>;
  /** Metric samples VictoriaMetrics stored per second over the window (its own `vm_rows_inserted_total`). */
  samplesPerSecond: number;
  /**
   * The ingesting process's CPU over the window divided by the heartbeats it stored, and by the thousands of samples:
   * the whole process's CPU each time (every agent's heartbeat comes with a metric batch, and a snapshot every 5
   * minutes), so both grow or stay flat together; they are the per-agent cost in two units.
   */
  cpuMsPerHeartbeat: number;
  cpuMsPer1000Samples: number;
  backlogFirstHalf: number;
  backlogSecondHalf: number;
  backlogMax: number;
  lagMs: { p50: number; p99: number; max: number; samples: number };
  probeFailures: number;
  rssMiB: Spread & { last: number | undefined };
  /** CPU of the ingesting process over the window, in cores (1 = one core busy all the time). */
  cpuCores: number;
  enrolSeconds: number;
  /**
   * The simulated agents' processes, the CPU they used (in cores) and the heartbeats a second their agents send (one
   * every 10 s each): against messagesPerSecond.heartbeat, whether the load was delivered in full. Absent in figures of
   * runs before 2026-11-28 13:00 UTC (one process).
   */
  simulator?: { processes: number; cores: number; heartbeatsOffered: number };
  /**
   * Where the machine's CPU went over the window, in cores: all of it busy, and the processes beside the ingesting
   * one (the simulator is above). Busy near the core count means the machine, not the system, set the lag. Absent in
   * figures before 2026-11-28 18:30 UTC.
   */
  machine?: { cores: number; busyCores: number; postgres: number; natsServer: number; victoriaMetrics: number };
  /** Each consumer's mean backlog over the window's second half: which one lags. Absent before 18:30 UTC. */
  backlogByConsumer?: Record<string, number>;
  /**
   * Before the window: seconds from the agents' start until every host was online (NaN if not within 5 minutes), the
   * backlog's peak, and the probes' lag meanwhile. The window starts after it and the warm-up. Absent before
   * 2026-11-29 04:30 UTC, when the window began 20 s after the agents' start, wherever their start-up was.
   */
  startup?: {
    allOnlineSeconds: number;
    backlogMax: number;
    lagMs: { p50: number; p99: number; max: number; samples: number };
  };
}

export interface FleetCurve {
  sizes: FleetFigures[];
  /** CPU per heartbeat at the largest size / at the smallest (target ≤ 1.2). */
  cpuPerHeartbeatGrowth: number;
}

/** VictoriaMetrics' count of stored rows (samples), every ingest path summed. */
async function storedSamples(tsdbWriteBase: string): Promise<number> {
  const text = await (await fetch(`${tsdbWriteBase}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^vm_rows_inserted_total\{[^}]*\} (\d+(?:\.\d+)?(?:e[+-]?\d+)?)$/gm))
    total += Number(m[1]);
  return total;
}

export async function fleetBench(deps: FleetBenchDeps): Promise<FleetCurve> {
  const sizes = (process.env.BENCH_FLEET_SIZES ?? '500,1000,2000')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
  if (sizes.length === 0)
    throw new Error('BENCH_FLEET_SIZES: a comma-separated list of agent counts, e.g. 500,1000,2000');
  const figures: FleetFigures[] = [];
  for (const agents of sizes) figures.push(await fleetRun(deps, agents));
  const first = figures[0]!;
  const last = figures.at(-1)!;
  const curve: FleetCurve = { sizes: figures, cpuPerHeartbeatGrowth: last.cpuMsPerHeartbeat / first.cpuMsPerHeartbeat };
  console.log('\n### fleet scaling curve');
  console.log(
    '| agents | CPU per heartbeat | CPU per 1,000 samples | RSS mean | backlog 1st / 2nd half | lag p50 / p99 |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const f of figures)
    console.log(
      `| ${f.agents} | ${f.cpuMsPerHeartbeat.toFixed(2)} ms | ${f.cpuMsPer1000Samples.toFixed(2)} ms | ${f.rssMiB.mean.toFixed(0)} MiB | ${f.backlogFirstHalf} / ${f.backlogSecondHalf} | ${f.lagMs.p50.toFixed(0)} / ${f.lagMs.p99.toFixed(0)} ms |`,
    );
  console.log(
    `CPU per heartbeat at ${last.agents} / at ${first.agents}: ${curve.cpuPerHeartbeatGrowth.toFixed(2)} (target ≤ 1.20)`,
  );
  return curve;
}

async function fleetRun(deps: FleetBenchDeps, agents: number): Promise<FleetFigures> {
  // Long enough to hold a second round of snapshots (every 5 minutes), so the steady state includes inventory.
  const measureSeconds = Number(process.env.BENCH_FLEET_SECONDS ?? 320);
  const warmupSeconds = Number(process.env.BENCH_FLEET_WARMUP_SECONDS ?? 20);
  const base = `http://127.0.0.1:${FLEET_PORT}`;
  const system = await deps.start(
    ['main.ts'],
    { ...deps.env, SVC_SERVER_PORT: String(FLEET_PORT), SVC_GATEWAYS: 'console', SVC_ACTORS: 'identity,fleet' },
    `${base}/readyz`,
  );
  const systemPid = system.pid!;

  // A client of its own, emptied each run (its hosts, agents and inventory cascade away), and fresh agents.
  const conn = (await deps.stores.orm()).em.fork().getConnection();
  const benchClient = await freshBenchClient(conn, 'bench-fleet', 'Bench fleet');
  const tokens = await benchInstallTokens(conn, benchClient, agents + PROBES);
  rmSync(STATE_DIR, { recursive: true, force: true });
  // The simulated agents run in several processes (BENCH_FLEET_SIM_PROCESSES, by default one per 500 agents): one
  // event loop delivered 117 of the 200 heartbeats a second 2,000 agents send. Each process has its own slice of the
  // agents, enrolled into a state directory of its own.
  const simProcesses = Math.max(
    1,
    Math.min(agents, Number(process.env.BENCH_FLEET_SIM_PROCESSES ?? Math.round(agents / 500)) || 1),
  );
  const slices = Array.from({ length: simProcesses }, (_, k) => {
    const from = Math.floor((agents * k) / simProcesses);
    const to = Math.floor((agents * (k + 1)) / simProcesses);
    return { dir: `${STATE_DIR}/part-${k}`, tokens: tokens.slice(from, to) };
  });
  const t0 = performance.now();
  const enrolled: { failed: { index: number; message: string }[] } = { failed: [] };
  for (const slice of slices) {
    const r = await enrollSimulated({
      server: base,
      tokens: slice.tokens,
      stateDir: slice.dir,
      count: slice.tokens.length,
      concurrency: 16,
      log: deps.log,
    });
    enrolled.failed.push(...r.failed);
  }
  const enrolSeconds = (performance.now() - t0) / 1000;
  if (enrolled.failed.length > 0)
    throw new Error(`${enrolled.failed.length} simulated agents failed to enrol: ${enrolled.failed[0]?.message}`);
  console.log(
    `\n## fleet: ${agents} agents enrolled in ${enrolSeconds.toFixed(1)} s; starting them (heartbeat + metrics every 10 s, a ~365 KB snapshot every 5 min, phases spread over the 5 minutes)`,
  );

  const svc = await connect({
    servers: deps.config.SVC_NATS_URL.split(','),
    authenticator: credsAuthenticator(readFileSync(deps.config.SVC_NATS_CREDS!)),
    ...brokerTls(deps.config.SVC_NATS_CA),
  });
  const jsm = await jetstreamManager(svc);
  // The fleet runs in its own process, as it would on its hosts: its CPU is not the bench loop's. Its runtime is the
  // pinned one even when `bench:runtimes` runs the system on an older Node (BENCH_AGENT_NODE): the load stays the same.
  const fleetStarted = performance.now();
  const fleet = slices.map((slice) =>
    spawn(
      process.env.BENCH_AGENT_NODE || process.execPath,
      [
        'agent/main.ts',
        'run',
        '--simulate',
        String(slice.tokens.length),
        '--state-dir',
        slice.dir,
        '--interval',
        '10',
        '--inventory-interval',
        '300',
      ],
      {
        env: {
          ...process.env,
          SVC_LOG_LEVEL: 'warn',
          // The older runtime's loader (tsx) is not the pinned Node's.
          ...(process.env.BENCH_AGENT_NODE ? { NODE_OPTIONS: '' } : {}),
        },
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    ),
  );

  // Probe agents in this process: heartbeats with a unique version, polled through the API until they show.
  const probes: { nc: NatsConnection; agentId: string; hostId: string }[] = [];
  for (let i = 0; i < PROBES; i++) {
    const dir = `${STATE_DIR}/probe-${i}`;
    await enrollAgent({
      server: base,
      token: tokens[agents + i]!,
      stateDir: dir,
      hostname: `probe-${i}`,
      os: 'linux',
      arch: 'x86_64',
    });
    const state = await readAgentState(dir);
    const nc = await connect({
      servers: state.nats_servers,
      authenticator: credsAuthenticator(readFileSync(statePaths(dir).creds)),
      tls: { ca: await readBrokerCa(dir) },
      inboxPrefix: state.inbox_prefix,
    });
    probes.push({ nc, agentId: state.agent_id, hostId: state.host_id });
  }
  const headers = { authorization: `Bearer ${deps.token}` };

  const lags: number[] = [];
  // Probes answered while the fleet was still starting: reported apart from the steady state's.
  const startupLags: number[] = [];
  let startingUp = true;
  let probeFailures = 0;
  let measuring = false;
  let stop = false;
  const probeLoop = async (p: (typeof probes)[number], offset: number): Promise<void> => {
    await sleep(offset);
    for (let n = 0; !stop; n++) {
      const version = `probe-${randomUUID().slice(0, 8)}`;
      const sent = performance.now();
      try {
        await p.nc.request(
          telemetrySubject(p.agentId, 'heartbeat'),
          encoder.encode(JSON.stringify({ sent_at: new Date().toISOString(), agent_version: version })),
          { timeout: 5000 },
        );
        for (;;) {
          const res = await fetch(`${base}/api/v1/hosts/${p.hostId}`, { headers });
          if (res.ok && ((await res.json()) as { data: { agent_version: string } }).data.agent_version === version)
            break;
          if (performance.now() - sent > 30_000) throw new Error('not visible after 30 s');
          await sleep(10);
        }
        if (measuring) lags.push(performance.now() - sent);
        else if (startingUp) startupLags.push(performance.now() - sent);
      } catch {
        probeFailures++;
      }
      await sleep(2_000);
    }
  };
  const probing = probes.map((p, i) => probeLoop(p, i * 400));

  // The start-up: every agent connects and its first heartbeat brings its host online (2,000 agents at once, as after
  // a broker outage). The window measures the steady state after it, once the warm-up has also passed.
  const startupBacklog: number[] = [];
  let online = 0;
  while (performance.now() - fleetStarted < 300_000) {
    const [row] = await conn.execute<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM hosts WHERE client_id = ? AND agent_status = 'online'`,
      [benchClient.clientId],
    );
    online = row?.n ?? 0;
    startupBacklog.push((await backlog(jsm)).pending);
    if (online >= agents + PROBES) break;
    await sleep(1_000);
  }
  const startupSeconds = (performance.now() - fleetStarted) / 1000;
  startingUp = false;
  const startup = {
    allOnlineSeconds: online >= agents + PROBES ? startupSeconds : Number.NaN,
    backlogMax: Math.max(0, ...startupBacklog),
    lagMs: lagFigures(startupLags),
  };
  console.log(
    `start-up: ${online >= agents + PROBES ? `every host online ${startupSeconds.toFixed(1)} s after the simulator's processes were started` : `${online} of ${agents + PROBES} hosts online after ${startupSeconds.toFixed(0)} s: the window below includes the rest of the start-up`}; backlog max ${startup.backlogMax}; lag meanwhile p50 ${startup.lagMs.p50.toFixed(0)} ms, p99 ${startup.lagMs.p99.toFixed(0)} ms, max ${startup.lagMs.max.toFixed(0)} ms over ${startupLags.length} probes`,
  );
  await sleep(warmupSeconds * 1000);
  const rss: number[] = [];
  const pendingSeries: number[] = [];
  const first = await backlog(jsm);
  const tsdbWrite = tsdbBases(deps.config).write;
  const samplesBefore = await storedSamples(tsdbWrite);
  const cpuBefore = cpuSeconds(systemPid);
  const simCpu = (): number => fleet.reduce((sum, f) => sum + cpuSeconds(f.pid!), 0);
  const simCpuBefore = simCpu();
  const busy = busyMeter();
  const others = cpuMeter([
    { name: 'postgres', comm: /^postgres$/ },
    { name: 'nats-server', comm: /^nats-server$/ },
    { name: 'victoria-metrics', comm: /^victoria-metric/ },
  ]);
  const byConsumerSeries: Record<string, number>[] = [];
  const startedAt = performance.now();
  measuring = true;
  while (performance.now() - startedAt < measureSeconds * 1000) {
    await sleep(5_000);
    const mem = memoryMiB(systemPid)?.rss;
    if (mem !== undefined) rss.push(mem);
    const now = await backlog(jsm);
    pendingSeries.push(now.pending);
    byConsumerSeries.push(now.byConsumer);
  }
  measuring = false;
  const machineBusy = busy();
  const otherMs = others();
  const last = await backlog(jsm);
  const seconds = (performance.now() - startedAt) / 1000;
  const cpuUsed = cpuSeconds(systemPid) - cpuBefore;
  const cpuShare = cpuUsed / seconds;
  const simulatorCores = (simCpu() - simCpuBefore) / seconds;
  const samples = (await storedSamples(tsdbWrite)) - samplesBefore;
  stop = true;
  await Promise.all(probing);
  await Promise.all(
    fleet.map((f) => {
      const exited = new Promise((r) => f.once('exit', r));
      f.kill('SIGTERM');
      return f.exitCode === null && f.signalCode === null ? exited : undefined;
    }),
  );
  for (const p of probes) await p.nc.close();
  // What the agents sent is ingested before the system stops: a backlog left in the stream was consumed by the next
  // system on these durables (the next size's, or the `single` system of the search part, whose figures it spoiled).
  const drainStarted = performance.now();
  let left = (await backlog(jsm)).pending;
  while (left > 0 && performance.now() - drainStarted < 180_000) {
    await new Promise((r) => setTimeout(r, 500));
    left = (await backlog(jsm)).pending;
  }
  console.log(
    `after the agents stopped: ${left === 0 ? 'backlog drained' : `${left} messages still pending`} in ${((performance.now() - drainStarted) / 1000).toFixed(1)} s`,
  );
  await svc.close();

  const ingested = Object.fromEntries(
    DURABLES.map((d) => [d.replace('fleet-telemetry-', ''), ((last.acked[d] ?? 0) - (first.acked[d] ?? 0)) / seconds]),
  );
  const half = Math.floor(pendingSeries.length / 2);
  const avg = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const secondHalf = byConsumerSeries.slice(half);
  const backlogByConsumer = Object.fromEntries(
    Object.keys(secondHalf[0] ?? {}).map((k) => [k, Math.round(avg(secondHalf.map((b) => b[k] ?? 0)))]),
  );
  const cores = (ms: number | undefined): number => (ms ?? 0) / 1000 / seconds;
  const result: FleetFigures = {
    agents,
    measureSeconds: Math.round(seconds),
    messagesPerSecond: ingested,
    samplesPerSecond: samples / seconds,
    cpuMsPerHeartbeat: (cpuUsed * 1000) / ((ingested.heartbeat ?? 0) * seconds),
    cpuMsPer1000Samples: (cpuUsed * 1000) / (samples / 1000),
    backlogFirstHalf: Math.round(avg(pendingSeries.slice(0, half))),
    backlogSecondHalf: Math.round(avg(pendingSeries.slice(half))),
    backlogMax: Math.max(0, ...pendingSeries),
    lagMs: lagFigures(lags),
    probeFailures,
    rssMiB: { ...spread(rss), last: rss.at(-1) },
    cpuCores: cpuShare,
    enrolSeconds,
    simulator: { processes: simProcesses, cores: simulatorCores, heartbeatsOffered: agents / 10 },
    machine: {
      cores: machineBusy.cores,
      busyCores: machineBusy.busyCores,
      postgres: cores(otherMs.postgres),
      natsServer: cores(otherMs['nats-server']),
      victoriaMetrics: cores(otherMs['victoria-metrics']),
    },
    backlogByConsumer,
    startup,
  };
  console.log(
    `simulator: ${simProcesses} process(es), ${(simulatorCores * 100).toFixed(0)}% of one core; heartbeats stored ${(ingested.heartbeat ?? 0).toFixed(1)}/s of ${(agents / 10).toFixed(0)}/s sent by its agents`,
  );
  const m = result.machine!;
  console.log(
    `machine: ${m.busyCores.toFixed(2)} of ${m.cores} cores busy; ingesting process ${cpuShare.toFixed(2)}, simulator ${simulatorCores.toFixed(2)}, PostgreSQL ${m.postgres.toFixed(2)}, nats-server ${m.natsServer.toFixed(2)}, VictoriaMetrics ${m.victoriaMetrics.toFixed(2)}, the rest ${Math.max(0, m.busyCores - cpuShare - simulatorCores - m.postgres - m.natsServer - m.victoriaMetrics).toFixed(2)}`,
  );
  console.log(
    `backlog by consumer, second half avg: ${Object.entries(backlogByConsumer)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  console.log(
    `ingest, acknowledged messages/s by kind: ${Object.entries(ingested)
      .map(([k, v]) => `${k} ${v.toFixed(1)}`)
      .join(', ')} over ${result.measureSeconds} s`,
  );
  console.log(
    `backlog (pending + unacked, all four consumers): first half avg ${result.backlogFirstHalf}, second half avg ${result.backlogSecondHalf}, max ${result.backlogMax} (target: no growth)`,
  );
  console.log(
    `lag publish → visible in GET /api/v1/hosts/:id: p50 ${result.lagMs.p50.toFixed(0)} ms, p99 ${result.lagMs.p99.toFixed(0)} ms over ${lags.length} probes (target p99 ≤ 2000 ms); ${probeFailures} failed`,
  );
  console.log(
    `ingesting process: RSS ${result.rssMiB.mean.toFixed(0)} MiB mean, ${result.rssMiB.max.toFixed(0)} MiB max; CPU ${(cpuShare * 100).toFixed(0)}% of one core: ${result.cpuMsPerHeartbeat.toFixed(2)} ms per heartbeat, ${result.cpuMsPer1000Samples.toFixed(2)} ms per 1,000 samples (${result.samplesPerSecond.toFixed(0)} samples/s stored)`,
  );
  // The next size starts its own process on the same port.
  const exited = new Promise((r) => system.once('exit', r));
  system.kill('SIGTERM');
  if (system.exitCode === null && system.signalCode === null) await exited;
  return result;
}
