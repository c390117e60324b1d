// The metrics part of `npm run bench` (`npm run bench -- metrics`):
// - ingest: samples per second from enrolled agents (their own NATS users) through JetStream, the fleet's metrics
//   consumer and its batched imports into VictoriaMetrics, against VictoriaMetrics' own /api/v1/import of the same
//   samples (pre-serialized, 4 imports at a time like the consumer), in interleaved rounds of the same run;
// - charts: a 6-hour host chart (1-minute buckets) and a 24-hour one (hourly) through the console gateway, against the
//   same query_range sent straight to VictoriaMetrics, sequential calls interleaved pair by pair.
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { bucketsOf } from '../actors/fleet/metrics/buckets.ts';
import { batchToImport, METRICS_DURABLE, METRICS_INGEST_DEFAULTS } from '../actors/fleet/metrics/ingest.ts';
import { hostFilter, selector } from '../actors/fleet/metrics/store-reads.ts';
import { tsdbBases, type Config } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import { wireDurableName } from '../platform/namespace.ts';
import { brokerTls } from '../platform/nats.ts';
import type { Stores } from '../platform/stores/index.ts';
import { Tsdb, type ImportSeries } from '../actors/fleet/metrics/tsdb.ts';
import { enrollSimulated, readAgentState, readBrokerCa, simDir, statePaths } from '../agent/index.ts';
import type { MetricSample } from '../contracts/domains/agent-telemetry.ts';
import { decodeCompactMetricBatch, encodeCompactMetricBatch } from '../contracts/domains/metric-wire.ts';
import { streams, telemetrySubject } from '../contracts/streams.ts';
import { cpuMeter, stealMeter, type ProcessGroup } from './cpu.ts';
import { benchInstallTokens, freshBenchClient } from './fixtures.ts';
import { pct, percentile, spread, type Spread } from './stats.ts';

// 18084 is taken by other parts (events, service desk); BENCH_METRICS_PORT overrides.
export const METRICS_PORT = Number(process.env.BENCH_METRICS_PORT ?? 18086);
const STATE_DIR = 'data/bench/metrics-agents';
const encoder = new TextEncoder();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface MetricsBenchDeps {
  config: Config;
  stores: Stores;
  token: string;
  log: Logger;
  rounds: number;
  start: (args: string[], env: Record<string, string>, readyUrl: string) => Promise<ChildProcess>;
  env: Record<string, string>;
}

/**
 * DAMON's kernel threads, where the machine runs them: on these VMs a physical-address monitor with a pageout scheme
 * samples every 500 ms and stalls the machine for 10-20 ms each time (slow chart calls line up with its bursts).
 */
const KDAMOND: ProcessGroup = { name: 'kdamond', comm: /^kdamond/ };

export interface ChartFigures {
  gateway: { p50: Spread; p99: Spread };
  direct: { p50: Spread; p99: Spread };
  /** `GET /hosts/:id` on the same gateway (no store): what the hop alone costs. */
  hostRoute: { p50: Spread; p99: Spread };
  p99Ratio: Spread;
  p50Ratio: Spread;
  calls: number;
  points: number;
  /** CPU of the kernel's DAMON threads per second of the calls (0 where the machine runs none). */
  kdamondMsPerS: number;
}

export interface MetricsFigures {
  ingest: {
    agents: number;
    samplesPerRound: number;
    pipeline: Spread;
    raw: Spread;
    ratio: Spread;
    cpuMsPer1kSamples?: Record<'pipeline' | 'raw', Record<string, number>>;
    vmDeferredMsPer1kSamples?: Record<'pipeline' | 'raw', number>;
    steal?: Record<'pipeline' | 'raw', Spread>;
  };
  chart6h: ChartFigures;
  chart24h: ChartFigures;
  query: {
    calls: number;
    bytes: number;
    directBytes: number;
    gatewayP50: number;
    gatewayP99: number;
    directP50: number;
    directP99: number;
  };
}

interface Agent {
  nc: NatsConnection;
  js: JetStreamClient;
  agentId: string;
  hostId: string;
}

/** One batch per agent per step: `series` samples, all at the batch's time (no time_ms, as the reference agent sends). */
function batchSamples(series: number, seed: number): MetricSample[] {
  const out: MetricSample[] = [];
  for (let i = 0; i < series; i++) {
    const labels: Record<string, string> =
      i < 20 ? {} : { pid: String(1000 + (i % 40)), process_name: `proc-${i % 40}` };
    out.push({
      name: i < 20 ? `bench_host_metric_${i}` : `bench_process_metric_${Math.floor(i / 40)}`,
      value: (seed * 31 + i) % 1000,
      labels,
    });
  }
  return out;
}

async function durableIdle(jsm: JetStreamManager, atLeastSeq: number): Promise<void> {
  const durable = wireDurableName(METRICS_DURABLE);
  for (;;) {
    const info = await jsm.consumers.info(streams.SVC_TELEMETRY.name, durable);
    if (info.ack_floor.stream_seq >= atLeastSeq && info.num_ack_pending === 0) return;
    await sleep(20);
  }
}

export async function metricsBench(deps: MetricsBenchDeps): Promise<MetricsFigures> {
  const agents = Number(process.env.BENCH_METRICS_AGENTS ?? 20);
  const batchesPerAgent = Number(process.env.BENCH_METRICS_BATCHES ?? 100);
  const seriesPerBatch = Number(process.env.BENCH_METRICS_SERIES ?? 300);
  // 1,000 sequential calls per path and round: the p99 is then the 10th slowest, not the 2nd (which one pause set).
  const chartCalls = Number(process.env.BENCH_METRICS_CHART_CALLS ?? 1000);
  // BENCH_METRICS_WIRE=json: the agents send JSON batches instead of the reference agent's compact form.
  const wire = process.env.BENCH_METRICS_WIRE === 'json' ? 'json' : 'compact';
  const base = `http://127.0.0.1:${METRICS_PORT}`;
  const system = await deps.start(
    ['main.ts'],
    { ...deps.env, SVC_SERVER_PORT: String(METRICS_PORT), SVC_GATEWAYS: 'console', SVC_ACTORS: 'identity,fleet' },
    `${base}/readyz`,
  );
  const tsdb = new Tsdb(tsdbBases(deps.config), { timeoutMs: 60_000 });
  // The "straight to VictoriaMetrics" figures query the read base (a cluster's vmselect), as the services do.
  const tsdbRead = tsdbBases(deps.config).read.replace(/\/+$/, '');
  const conn = (await deps.stores.orm()).em.fork().getConnection();
  const svc = await connect({
    servers: deps.config.SVC_NATS_URL.split(','),
    authenticator: credsAuthenticator(readFileSync(deps.config.SVC_NATS_CREDS!)),
    ...brokerTls(deps.config.SVC_NATS_CA),
  });
  const jsm = await jetstreamManager(svc);
  const connections: Agent[] = [];
  const benchHosts: string[] = [];
  try {
    // A client of its own, emptied each run, with fresh agents enrolled through the API.
    const { clientId, envId } = await freshBenchClient(conn, 'bench-metrics', 'Bench metrics');
    const tokens = await benchInstallTokens(conn, { clientId, envId }, agents);
    rmSync(STATE_DIR, { recursive: true, force: true });
    const enrolled = await enrollSimulated({
      server: base,
      tokens,
      stateDir: STATE_DIR,
      count: agents,
      concurrency: 8,
      log: deps.log,
    });
    if (enrolled.failed.length > 0)
      throw new Error(`${enrolled.failed.length} bench agents failed to enrol: ${enrolled.failed[0]?.message}`);
    for (let i = 1; i <= agents; i++) {
      const dir = simDir(STATE_DIR, i);
      const state = await readAgentState(dir);
      // As the reference agent connects (agent/connection.ts): its own user and inbox prefix, no async traces.
      const nc = await connect({
        servers: state.nats_servers,
        authenticator: credsAuthenticator(readFileSync(statePaths(dir).creds)),
        tls: { ca: await readBrokerCa(dir) },
        inboxPrefix: state.inbox_prefix,
        noAsyncTraces: true,
      });
      connections.push({ nc, js: jetstream(nc), agentId: state.agent_id, hostId: state.host_id });
      benchHosts.push(state.host_id);
    }

    // ---- ingest ----------------------------------------------------------------------------------------------------
    const rawHosts = Array.from({ length: agents }, () => randomUUID());
    benchHosts.push(...rawHosts);
    const samplesPerRound = agents * batchesPerAgent * seriesPerBatch;
    let clock = Date.now() - 6 * 3_600_000;
    const roundData = (): { t0: number } => {
      const t0 = clock;
      clock += batchesPerAgent * 10_000 + 60_000;
      return { t0 };
    };
    const pipelineRound = async (begin: () => void = () => undefined): Promise<number> => {
      const { t0 } = roundData();
      // What the reference agent publishes (its compact form), or JSON text as any other agent may send it.
      const payloads = connections.map((_, a) =>
        Array.from({ length: batchesPerAgent }, (__, b) => {
          const batch = {
            collected_at: new Date(t0 + b * 10_000).toISOString(),
            samples: batchSamples(seriesPerBatch, a * 7 + b),
          };
          return wire === 'json' ? encoder.encode(JSON.stringify(batch)) : encodeCompactMetricBatch(batch);
        }),
      );
      begin();
      const started = performance.now();
      let maxSeq = 0;
      await Promise.all(
        connections.map(async (agent, a) => {
          // Up to 16 publishes in flight per agent, as the agent's outbox allows 32.
          const mine = payloads[a]!;
          for (let i = 0; i < mine.length; i += 16) {
            const acks = await Promise.all(
              mine.slice(i, i + 16).map((p) => agent.js.publish(telemetrySubject(agent.agentId, 'metrics'), p)),
            );
            for (const ack of acks) maxSeq = Math.max(maxSeq, ack.seq);
          }
        }),
      );
      await durableIdle(jsm, maxSeq);
      return samplesPerRound / ((performance.now() - started) / 1000);
    };
    const rawRound = async (begin: () => void = () => undefined): Promise<number> => {
      const { t0 } = roundData();
      // The bytes the consumer writes for these samples (its own line writer), built before the clock starts, as many
      // samples per import and imports at a time as the consumer's batcher (METRICS_INGEST_DEFAULTS). Built as bytes,
      // without an object per row: 600,000 row objects left the garbage collector busy during the round.
      const bodies: Buffer[] = [];
      let pending: Buffer[] = [];
      let pendingSamples = 0;
      rawHosts.forEach((hostId, a) => {
        const sender = { agent_id: '', host_id: hostId, environment_id: envId, client_id: clientId };
        for (let b = 0; b < batchesPerAgent; b++) {
          const batch = {
            collected_at: new Date(t0 + b * 10_000).toISOString(),
            samples: batchSamples(seriesPerBatch, a * 7 + b),
          };
          pending.push(batchToImport(sender, decodeCompactMetricBatch(encodeCompactMetricBatch(batch))).body);
          pendingSamples += seriesPerBatch;
          if (pendingSamples >= METRICS_INGEST_DEFAULTS.flushMaxSamples) {
            bodies.push(Buffer.concat(pending));
            pending = [];
            pendingSamples = 0;
          }
        }
      });
      if (pending.length > 0) bodies.push(Buffer.concat(pending));
      begin();
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: METRICS_INGEST_DEFAULTS.maxConcurrentImports }, async () => {
          for (let i = next++; i < bodies.length; i = next++) {
            // The consumer's own sender (node:http), so that both paths pay the same for getting bytes to the store.
            await tsdb.importLines(bodies[i]!);
          }
        }),
      );
      return samplesPerRound / ((performance.now() - started) / 1000);
    };
    console.log(
      `\n## metrics ingest: ${agents} agents × ${batchesPerAgent} batches × ${seriesPerBatch} samples = ${samplesPerRound} samples per round, warm-up + ${deps.rounds} interleaved rounds`,
    );
    await pipelineRound();
    await rawRound();
    const pipeline: number[] = [];
    const raw: number[] = [];
    // Where each path's CPU goes, per 1,000 samples: the system (consumer), nats-server, VictoriaMetrics, this process
    // (the agents' publishing, or the raw imports).
    const groups: ProcessGroup[] = [
      { name: 'system', pids: () => (system.pid ? [system.pid] : []) },
      { name: 'nats-server', comm: /^nats-server$/ },
      { name: 'victoria-metrics', comm: /^victoria-metric/ },
      { name: 'bench (agents / raw sender)', pids: () => [process.pid] },
    ];
    const cpu = { pipeline: {} as Record<string, number>, raw: {} as Record<string, number> };
    const stolen = { pipeline: [] as number[], raw: [] as number[] };
    /** Counts from the moment the round's clock starts (its payloads are built before, off the clock and the meter). */
    const metered = async (path: 'pipeline' | 'raw', run: (begin: () => void) => Promise<number>): Promise<number> => {
      let stop: (() => Record<string, number>) | undefined;
      let steal: (() => number) | undefined;
      const rate = await run(() => {
        stop = cpuMeter(groups);
        steal = stealMeter();
      });
      if (!stop || !steal) throw new Error('the round never started its clock');
      stolen[path].push(steal());
      for (const [k, ms] of Object.entries(stop())) cpu[path][k] = (cpu[path][k] ?? 0) + ms;
      return rate;
    };
    // VictoriaMetrics finishes an import's work (flushes, merges) after answering it: without a pause, that work from
    // one round ran during the next, and the (longer) pipeline rounds were charged for the raw rounds' merges.
    const settle = async (): Promise<number> => {
      const total = cpuMeter(groups.filter((g) => g.name === 'victoria-metrics'));
      await tsdb.flush().catch(() => undefined);
      for (let i = 0; i < 40; i++) {
        const meter = cpuMeter(groups.filter((g) => g.name === 'victoria-metrics'));
        await sleep(250);
        if ((meter()['victoria-metrics'] ?? 0) < 25) break; // under a tenth of a core
      }
      return total()['victoria-metrics'] ?? 0;
    };
    // What VictoriaMetrics still did for a round after its clock stopped (its flush to searchable parts, merges):
    // CPU ms, less the idle pauses' own share.
    const deferred = { pipeline: 0, raw: 0 };
    await settle();
    for (let r = 0; r < deps.rounds; r++) {
      pipeline.push(await metered('pipeline', pipelineRound));
      deferred.pipeline += await settle();
      raw.push(await metered('raw', rawRound));
      deferred.raw += await settle();
    }
    const ingest = {
      agents,
      samplesPerRound,
      pipeline: spread(pipeline),
      raw: spread(raw),
      ratio: spread(pipeline.map((p, i) => p / raw[i]!)),
      steal: { pipeline: spread(stolen.pipeline), raw: spread(stolen.raw) },
    };
    console.log(
      `agents → JetStream → consumer → VictoriaMetrics: ${ingest.pipeline.mean.toFixed(0)} samples/s (${ingest.pipeline.min.toFixed(0)}–${ingest.pipeline.max.toFixed(0)})`,
    );
    console.log(
      `VictoriaMetrics /api/v1/import of the same samples: ${ingest.raw.mean.toFixed(0)} samples/s (${ingest.raw.min.toFixed(0)}–${ingest.raw.max.toFixed(0)})`,
    );
    console.log(
      `pipeline / raw: ${ingest.ratio.mean.toFixed(2)} (${ingest.ratio.min.toFixed(2)}–${ingest.ratio.max.toFixed(2)}) (target ≥ 0.50)`,
    );
    console.log(
      `steal (the machine's CPU time taken by other tenants) during the rounds: pipeline ${pct(ingest.steal.pipeline)}, raw ${pct(ingest.steal.raw)}`,
    );
    const perK = (ms: number): number => Math.round(((ms * 1000) / (samplesPerRound * deps.rounds)) * 1000) / 1000;
    const cpuMsPer1kSamples = { pipeline: {} as Record<string, number>, raw: {} as Record<string, number> };
    for (const path of ['pipeline', 'raw'] as const) {
      for (const g of groups) cpuMsPer1kSamples[path][g.name] = perK(cpu[path][g.name] ?? 0);
      const total = Object.values(cpuMsPer1kSamples[path]).reduce((a, b) => a + b, 0);
      console.log(
        `CPU ms per 1,000 samples, ${path.padEnd(8)}: ${groups.map((g) => `${g.name} ${cpuMsPer1kSamples[path][g.name]!.toFixed(3)}`).join('  ')}  total ${total.toFixed(3)}`,
      );
    }
    const deferredPerK = { pipeline: perK(deferred.pipeline), raw: perK(deferred.raw) };
    console.log(
      `VictoriaMetrics' CPU after the round's clock stopped (flush, merges), ms per 1,000 samples: pipeline ${deferredPerK.pipeline.toFixed(3)}, raw ${deferredPerK.raw.toFixed(3)}`,
    );
    Object.assign(ingest, { cpuMsPer1kSamples, vmDeferredMsPer1kSamples: deferredPerK });

    // ---- charts ----------------------------------------------------------------------------------------------------
    // Once VictoriaMetrics has finished with the ingest's samples (its merges after 4 × 1.2 M samples ran into the
    // first chart calls and set their tail).
    await settle();
    // A host with 24 hours of 10-second samples: the host-level series and 8 per-CPU ones sharing its name.
    const chartHost = randomUUID();
    benchHosts.push(chartHost);
    await conn.execute(`INSERT INTO hosts (id, environment_id, client_id, hostname) VALUES (?, ?, ?, 'bench-chart')`, [
      chartHost,
      envId,
      clientId,
    ]);
    const now = Date.now();
    const from = now - 24 * 3_600_000;
    const timestamps = Array.from({ length: 8_640 }, (_, i) => from + i * 10_000);
    const chartRows: ImportSeries[] = [undefined, ...Array.from({ length: 8 }, (_, i) => String(i))].map((cpu) => ({
      metric: {
        __name__: 'cpu_usage_percent',
        ...(cpu !== undefined ? { cpu } : {}),
        host_id: chartHost,
        environment_id: envId,
        client_id: clientId,
      },
      values: timestamps.map((t, i) => Math.round((50 + 40 * Math.sin(i / 90) + (t % 7)) * 100) / 100),
      timestamps,
    }));
    await tsdb.importSeries(chartRows);
    await tsdb.flush();
    const headers = { authorization: `Bearer ${deps.token}` };
    const chart = async (hours: number): Promise<ChartFigures> => {
      const end = now;
      const start = end - hours * 3_600_000;
      const gatewayUrl = `${base}/api/v1/hosts/${chartHost}/metrics/cpu_usage_percent?start=${new Date(start).toISOString()}&end=${new Date(end).toISOString()}`;
      // The query_range the fleet actor sends for this chart (reads.ts, store-reads.ts gaugeBuckets).
      const b = bucketsOf({ startMs: start, endMs: end });
      const exact = selector([
        ['__name__', '=', 'cpu_usage_percent'],
        ['host_id', '=', chartHost],
        ['cpu', '=', ''],
      ]);
      const form = new URLSearchParams({
        query: `aggr_over_time(("count_over_time","sum_over_time","min_over_time","max_over_time"), ${exact}[${b.sizeMs}ms] offset 1ms) keep_metric_names`,
        start: String((b.firstMs + b.sizeMs) / 1000),
        end: String((b.lastMs + b.sizeMs) / 1000),
        step: String(b.sizeMs / 1000),
        nocache: '1',
        'extra_filters[]': hostFilter({ id: chartHost, client_id: clientId }),
      });
      let points = 0;
      const viaGateway = async (): Promise<number> => {
        const t0 = performance.now();
        const res = await fetch(gatewayUrl, { headers });
        const body = (await res.json()) as { data: unknown[] };
        if (!res.ok) throw new Error(`chart through the gateway: HTTP ${res.status}`);
        points = body.data.length;
        return performance.now() - t0;
      };
      const hostOnly = async (): Promise<number> => {
        const t0 = performance.now();
        const res = await fetch(`${base}/api/v1/hosts/${chartHost}`, { headers });
        await res.json();
        if (!res.ok) throw new Error(`host through the gateway: HTTP ${res.status}`);
        return performance.now() - t0;
      };
      const direct = async (): Promise<number> => {
        const t0 = performance.now();
        const res = await fetch(`${tsdbRead}/api/v1/query_range`, { method: 'POST', body: form });
        await res.json();
        if (!res.ok) throw new Error(`chart straight to VictoriaMetrics: HTTP ${res.status}`);
        return performance.now() - t0;
      };
      for (let i = 0; i < 30; i++) {
        await viaGateway();
        await direct();
      }
      const g: number[][] = [];
      const d: number[][] = [];
      const hop: number[][] = [];
      const kernel = cpuMeter([KDAMOND]);
      const kernelFrom = performance.now();
      for (let r = 0; r < deps.rounds; r++) {
        const gs: number[] = [];
        const ds: number[] = [];
        const hs: number[] = [];
        for (let i = 0; i < chartCalls; i++) {
          // For scale: the hop alone (authentication, NATS, the host's row) on a route without the store.
          if (i % 4 === 0) hs.push(await hostOnly());
          // Alternate which goes first, so neither always runs right after the other.
          if (i % 2 === 0) {
            gs.push(await viaGateway());
            ds.push(await direct());
          } else {
            ds.push(await direct());
            gs.push(await viaGateway());
          }
        }
        g.push(gs.sort((x, y) => x - y));
        d.push(ds.sort((x, y) => x - y));
        hop.push(hs.sort((x, y) => x - y));
      }
      const kdamondMsPerS = (kernel()[KDAMOND.name]! * 1000) / (performance.now() - kernelFrom);
      const at = (rounds: number[][], p: number): Spread => spread(rounds.map((xs) => percentile(xs, p)));
      const fig: ChartFigures = {
        gateway: { p50: at(g, 50), p99: at(g, 99) },
        direct: { p50: at(d, 50), p99: at(d, 99) },
        hostRoute: { p50: at(hop, 50), p99: at(hop, 99) },
        p50Ratio: spread(g.map((xs, i) => percentile(xs, 50) / percentile(d[i]!, 50))),
        p99Ratio: spread(g.map((xs, i) => percentile(xs, 99) / percentile(d[i]!, 99))),
        calls: chartCalls,
        points,
        kdamondMsPerS,
      };
      const f = (s: Spread): string => `${s.mean.toFixed(2)} (${s.min.toFixed(2)}–${s.max.toFixed(2)})`;
      console.log(
        `\n## metrics chart, ${hours} h (${b.sizeMs === 60_000 ? '1-minute' : 'hourly'} buckets, ${points} points), ${chartCalls} sequential calls per path per round, ms`,
      );
      console.log(`through the gateway: p50 ${f(fig.gateway.p50)}  p99 ${f(fig.gateway.p99)}`);
      console.log(`straight to VictoriaMetrics: p50 ${f(fig.direct.p50)}  p99 ${f(fig.direct.p99)}`);
      console.log(
        `for scale, GET /hosts/:id through the gateway (no store): p50 ${f(fig.hostRoute.p50)}  p99 ${f(fig.hostRoute.p99)}`,
      );
      console.log(`gateway / direct: p50 ${f(fig.p50Ratio)}  p99 ${f(fig.p99Ratio)} (target p99 ≤ 1.50)`);
      if (kdamondMsPerS > 0)
        console.log(
          `the kernel's memory monitor (kdamond, DAMON) ran ${kdamondMsPerS.toFixed(1)} ms per second during these calls`,
        );
      return fig;
    };
    const chart6h = await chart(6);
    const chart24h = await chart(24);

    // POST /metrics/query streamed through the gateway vs the same confined query_range straight to the store: 24 h
    // of 10-second points of all 9 series (~78,000 points, a few MB).
    const body = JSON.stringify({
      query: 'cpu_usage_percent',
      start: new Date(from).toISOString(),
      end: new Date(now).toISOString(),
      step: '10s',
      host_id: chartHost,
    });
    const queryForm = new URLSearchParams({
      query: '{__name__="cpu_usage_percent"}',
      start: String(from / 1000),
      end: String(now / 1000),
      step: '10',
      nocache: '1',
      'extra_filters[]': selector([
        ['client_id', '=', clientId],
        ['host_id', '=', chartHost],
      ]),
    });
    let bytes = [0, 0];
    const streamed = async (): Promise<number> => {
      const t0 = performance.now();
      const res = await fetch(`${base}/api/v1/metrics/query`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      if (!res.ok || !text.startsWith('{"status":"success"'))
        throw new Error(`query through the gateway: HTTP ${res.status} ${text.slice(0, 200)}`);
      bytes = [text.length, bytes[1]!];
      return performance.now() - t0;
    };
    const straight = async (): Promise<number> => {
      const t0 = performance.now();
      const res = await fetch(`${tsdbRead}/api/v1/query_range`, { method: 'POST', body: queryForm });
      const text = await res.text();
      if (!res.ok) throw new Error(`query straight to VictoriaMetrics: HTTP ${res.status}`);
      bytes = [bytes[0]!, text.length];
      return performance.now() - t0;
    };
    const qs: number[] = [];
    const ds: number[] = [];
    for (let i = 0; i < 5; i++) {
      await streamed();
      await straight();
    }
    for (let i = 0; i < Math.max(10, Math.round(chartCalls / 5)); i++) {
      qs.push(await streamed());
      ds.push(await straight());
    }
    qs.sort((x, y) => x - y);
    ds.sort((x, y) => x - y);
    const query = {
      calls: qs.length,
      bytes: bytes[0]!,
      directBytes: bytes[1]!,
      gatewayP50: percentile(qs, 50),
      gatewayP99: percentile(qs, 99),
      directP50: percentile(ds, 50),
      directP99: percentile(ds, 99),
    };
    console.log(
      `\n## POST /metrics/query, 24 h at 10 s of 9 series (${(query.bytes / 1e6).toFixed(1)} MB streamed; ${(query.directBytes / 1e6).toFixed(1)} MB straight), ${query.calls} sequential calls, ms`,
    );
    console.log(
      `through the gateway: p50 ${query.gatewayP50.toFixed(1)}  p99 ${query.gatewayP99.toFixed(1)}   straight: p50 ${query.directP50.toFixed(1)}  p99 ${query.directP99.toFixed(1)}`,
    );
    return { ingest, chart6h, chart24h, query };
  } finally {
    for (const a of connections) await a.nc.close().catch(() => undefined);
    await svc.close().catch(() => undefined);
    await tsdb.flush().catch(() => undefined);
    for (let i = 0; i < benchHosts.length; i += 50)
      await tsdb.deleteSeries([`{host_id=~"${benchHosts.slice(i, i + 50).join('|')}"}`]).catch(() => undefined);
    // Waits for its exit, so that a CPU profile it writes at exit (BENCH_CPU_PROF) is complete before the bench ends.
    if (system.exitCode === null && system.signalCode === null) {
      const exited = new Promise((resolve) => system.once('exit', resolve));
      system.kill('SIGTERM');
      // Its own shutdown gives up after 25 s; a process that never handled the signal is killed.
      if ((await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)])) === false)
        system.kill('SIGKILL');
    }
  }
}
