// `npm run bench:report`: the figures of data/bench/latest.json as the markdown table of docs/benchmarks.md (written
// there in place, and printed), so the page shows exactly what the last run of each part measured (with its spread
// over the rounds and its date).
import { readFileSync, writeFileSync } from 'node:fs';
import { figuresRows, mergeFiguresRows, REPORT_DOC, replaceFiguresTable, TABLE_HEADER } from './report-doc.ts';
import type { AgentFigures } from './agent.ts';
import type { FleetCurve } from './fleet.ts';
import { SCALING_CHART, scalingChartSvg, svgToPng } from './scaling-chart.ts';
import type { ServiceDeskFigures } from './servicedesk.ts';
import type { EventsFigures } from './events.ts';
import type { InvoiceFigures } from './invoice.ts';
import type { MemoryFigures } from './memory.ts';
import type { ChartFigures, MetricsFigures } from './metrics.ts';
import type { RuntimeFigures } from './runtime.ts';
import type { SearchFigures } from './search.ts';
import type { NotificationFigures } from './notifications.ts';
import type { Timing, WebFigures } from './web.ts';
import { fmt, hopSteps, pct, type PathFigures, type Spread } from './stats.ts';

interface Stamped {
  at: string;
  rounds: number;
  seconds: number;
}
interface Latest {
  hop?: Stamped & {
    single: PathFigures;
    split: PathFigures;
    direct: PathFigures;
    floor?: PathFigures;
    singleThroughputRatio: Spread;
    singleP99Ratio: Spread;
    splitThroughputRatio: Spread;
    splitP99Ratio: Spread;
    floorThroughputRatio?: Spread;
    floorP99Ratio?: Spread;
    singleToFloorThroughputRatio?: Spread;
    singleToFloorP99Ratio?: Spread;
    noHop?: PathFigures;
    noHopThroughputRatio?: Spread;
    noHopP99Ratio?: Spread;
    singleToNoHopThroughputRatio?: Spread;
    singleToNoHopP99Ratio?: Spread;
    bareHop?: PathFigures;
    runtimeHop?: PathFigures;
    moleculer?: PathFigures;
    moleculerSplit?: PathFigures;
    singleToMoleculerThroughputRatio?: Spread;
    singleToMoleculerP99Ratio?: Spread;
    splitToMoleculerThroughputRatio?: Spread;
    splitToMoleculerP99Ratio?: Spread;
    cpuPerRequest?: Record<string, Record<string, Spread>>;
    steal?: Record<string, Spread>;
  };
  login?: Stamped & { login: PathFigures; raw: Spread; ratio: Spread };
  me?: Stamped & { me: PathFigures };
  resolve?: Stamped & {
    cold: { p50: Spread; p99: Spread };
    warm: { p50: Spread; p99: Spread };
    bare?: { p50: Spread; p99: Spread };
  };
  signing?: Stamped & { micros: Spread; localMicros?: Spread; payloadBytes: number; share?: number };
  runtime?: Stamped & RuntimeFigures;
  invoice?: Stamped & InvoiceFigures;
  metrics?: Stamped & MetricsFigures;
  // Runs before the scaling curve (2026-11-28) kept one size's figures at the top level, without `sizes`: not shown.
  fleet?: Stamped & FleetCurve;
  search?: Stamped & SearchFigures;
  events?: Stamped & EventsFigures;
  servicedesk?: Stamped & ServiceDeskFigures;
  agent?: Stamped & AgentFigures;
  memory?: Stamped & MemoryFigures;
  web?: Stamped & WebFigures;
  notifications?: Stamped & NotificationFigures;
}

const latest = JSON.parse(readFileSync('data/bench/latest.json', 'utf8')) as Latest;
const rows: string[][] = [];
/** Where each part's rows begin in `rows`: the run cell of each row then names its part (report-doc.ts). */
const parts: [string, number][] = [];
const begin = (part: string): void => void parts.push([part, rows.length]);
const when = (s: Stamped): string => `${s.at.slice(0, 16).replace('T', ' ')} UTC, ${s.rounds}×${s.seconds}s`;
const path = (p: PathFigures): string => `${fmt(p.rps)} req/s, p50 ${fmt(p.p50, 1)} ms, p99 ${fmt(p.p99, 1)} ms`;
if (latest.hop) {
  begin('hop');
  const h = latest.hop;
  rows.push([
    `authenticated \`GET /api/v1/clients\`, single process (\`npm start\` shape): gateway → NATS → fleet actor → PostgreSQL`,
    path(h.single),
    '',
    when(h),
  ]);
  rows.push(['the same, split: gateway process → NATS → actor process', path(h.split), '', when(h)]);
  rows.push([
    'the same work without the hop: rate limit, token, access cache and the fleet list handler in a bare Fastify route',
    path(h.direct),
    '',
    when(h),
  ]);
  rows.push([
    'throughput single process / bare (per interleaved round)',
    `**${fmt(h.singleThroughputRatio, 2)}**`,
    '≥ 0.80',
    when(h),
  ]);
  rows.push(['p99 single process / bare', `**${fmt(h.singleP99Ratio, 2)}**`, '≤ 1.50', when(h)]);
  rows.push([
    'throughput split / bare, p99 split / bare',
    `${fmt(h.splitThroughputRatio, 2)}, ${fmt(h.splitP99Ratio, 2)}`,
    '',
    when(h),
  ]);
  if (h.floor && h.floorThroughputRatio && h.floorP99Ratio) {
    rows.push([
      'the floor: the bare route behind one bare NATS request-reply (JSON both ways; no envelope, signature, zod or framework)',
      path(h.floor),
      '',
      when(h),
    ]);
    rows.push([
      'throughput floor / bare, p99 floor / bare: what the transport alone costs on this machine',
      `**${fmt(h.floorThroughputRatio, 2)}**, ${fmt(h.floorP99Ratio, 2)}`,
      '',
      when(h),
    ]);
    // The hop's targets against the floor the transport sets on this machine (docs/benchmarks.md: why).
    if (h.singleToFloorThroughputRatio && h.singleToFloorP99Ratio)
      rows.push([
        'throughput, p99: single process / the floor (the hop targets measured from the floor the transport sets here)',
        `**${fmt(h.singleToFloorThroughputRatio, 2)}**, **${fmt(h.singleToFloorP99Ratio, 2)}**`,
        '≥ 0.85 of the floor',
        when(h),
      ]);
  }
  if (
    h.noHop &&
    h.noHopThroughputRatio &&
    h.noHopP99Ratio &&
    h.singleToNoHopThroughputRatio &&
    h.singleToNoHopP99Ratio
  ) {
    rows.push([
      "the gateway's own stack without the hop: the console gateway app (hooks, request ids, CORS, zod, access log) and `bridge`, the fleet list handler called in-process",
      path(h.noHop),
      '',
      when(h),
    ]);
    rows.push([
      "throughput, p99: gateway stack without the hop / bare (what the gateway's own features cost)",
      `${fmt(h.noHopThroughputRatio, 2)}, ${fmt(h.noHopP99Ratio, 2)}`,
      '',
      when(h),
    ]);
    rows.push([
      'throughput, p99: single process / gateway stack without the hop (what the hop alone costs)',
      `**${fmt(h.singleToNoHopThroughputRatio, 2)}**, ${fmt(h.singleToNoHopP99Ratio, 2)}`,
      '',
      when(h),
    ]);
  }
  if (h.bareHop && h.runtimeHop) {
    rows.push(
      [
        "the gateway's stack with a bare NATS request-reply to the list handler (the floor's hop, inside the stack)",
        path(h.bareHop),
        '',
        when(h),
      ],
      [
        "the gateway's stack with the runtime's hop (Caller → NATS → ActorHost) to the fleet list handler, alone in its process",
        path(h.runtimeHop),
        '',
        when(h),
      ],
    );
    const steps = hopSteps(h.cpuPerRequest);
    if (steps)
      rows.push([
        `the single process's CPU per request above bare Fastify, by step: ${steps.map((s) => s.step).join(', ')}`,
        `${steps.map((s) => s.ms.toFixed(3)).join(', ')} ms`,
        '',
        when(h),
      ]);
  }
  if (h.moleculer && h.singleToMoleculerThroughputRatio && h.singleToMoleculerP99Ratio)
    rows.push(
      [
        'the peer, Moleculer, one process: moleculer-web and the service on two brokers, over NATS (TLS)',
        path(h.moleculer),
        '',
        when(h),
      ],
      [
        'throughput, p99: single process / Moleculer one process',
        `**${fmt(h.singleToMoleculerThroughputRatio, 2)}**, **${fmt(h.singleToMoleculerP99Ratio, 2)}**`,
        '≥ 1.10, ≤ 0.90',
        when(h),
      ],
    );
  if (h.moleculerSplit && h.splitToMoleculerThroughputRatio && h.splitToMoleculerP99Ratio)
    rows.push(
      [
        'the peer, Moleculer, split: moleculer-web process → NATS (TLS) → service process',
        path(h.moleculerSplit),
        '',
        when(h),
      ],
      [
        'throughput, p99: split / Moleculer split',
        `**${fmt(h.splitToMoleculerThroughputRatio, 2)}**, **${fmt(h.splitToMoleculerP99Ratio, 2)}**`,
        '≥ 1.10, ≤ 0.90',
        when(h),
      ],
    );
  for (const [shape, cpu] of Object.entries(h.cpuPerRequest ?? {})) {
    const total = Object.values(cpu).reduce((a, c) => a + c.mean, 0);
    rows.push([
      `CPU per request, ${shape}: ${Object.keys(cpu).join(', ')}`,
      `${Object.values(cpu)
        .map((c) => c.mean.toFixed(3))
        .join(', ')} ms (total ${total.toFixed(2)} ms)`,
      '',
      when(h),
    ]);
  }
  if (h.steal)
    rows.push([
      `steal (the machine's CPU time taken by other tenants) during the rounds: ${Object.keys(h.steal).join(', ')}`,
      Object.values(h.steal).map(pct).join(', '),
      '',
      when(h),
    ]);
}
if (latest.signing) {
  begin('signing');
  const s = latest.signing;
  rows.push([
    `request signature: HMAC-SHA256 sign + verify of the ${s.payloadBytes}-byte envelope (verified in another process)`,
    `${fmt(s.micros, 1)} µs${s.share !== undefined ? `, **${(s.share * 100).toFixed(2)}%** of an actor-path request's CPU` : ''}`,
    '< 3%',
    when(s),
  ]);
  if (s.localMicros)
    rows.push([
      'the same, verified in the process that signed it (compared with what it signed)',
      `${fmt(s.localMicros, 1)} µs`,
      '',
      when(s),
    ]);
}
if (latest.runtime) {
  begin('runtime');
  const r = latest.runtime;
  const us = (x: Spread): string => `${x.mean.toFixed(1)} (${x.min.toFixed(1)}–${x.max.toFixed(1)}) µs`;
  rows.push([
    `CPU of one process per request-reply, ${r.concurrency} in flight, no HTTP or store: Caller → NATS → ActorHost (signed envelope, headers, schema, deadline, page forwarded)`,
    us(r.runtime),
    '',
    when(r),
  ]);
  rows.push([
    "the same JSON both ways through a bare nats.js request-reply; the runtime's own share (runtime − bare, per round)",
    `${us(r.bare)}; **${us(r.extra)}**`,
    '',
    when(r),
  ]);
}
if (latest.login) {
  begin('login');
  const l = latest.login;
  rows.push(['`POST /auth/login` (8 accounts without MFA, 8 connections)', path(l.login), '', when(l)]);
  rows.push([
    "raw argon2id verifications, 4 in parallel (the hasher's cap), interleaved",
    `${fmt(l.raw, 1)} /s`,
    '',
    when(l),
  ]);
  rows.push(['login / raw', `**${fmt(l.ratio, 2)}**`, '≥ 0.90', when(l)]);
}
if (latest.me) {
  begin('me');
  rows.push(['`GET /auth/me`, warm access cache', path(latest.me.me), '', when(latest.me)]);
}
if (latest.resolve) {
  begin('resolve');
  const r = latest.resolve;
  rows.push([
    'permission resolution over NATS, cold (cache dropped before each call)',
    `p50 ${fmt(r.cold.p50, 2)} ms, p99 ${fmt(r.cold.p99, 2)} ms`,
    '',
    when(r),
  ]);
  rows.push([
    'permission resolution, warm',
    `p50 ${fmt(r.warm.p50, 2)} ms, **p99 ${fmt(r.warm.p99, 2)} ms**`,
    '≤ 2 ms',
    when(r),
  ]);
  if (r.bare)
    rows.push([
      'for scale: a bare NATS request-reply to an echo, same machine, interleaved',
      `p50 ${fmt(r.bare.p50, 2)} ms, p99 ${fmt(r.bare.p99, 2)} ms`,
      '',
      when(r),
    ]);
}
if (latest.invoice) {
  begin('invoice');
  const i = latest.invoice;
  const kb = (bytes: number): string => `${Math.round(bytes / 1024)} KB`;
  rows.push([
    `invoice finalize with its PDF, ${i.finalize.lines} lines, warm browser, over HTTP (invoicing gateway → NATS → invoice actor → PostgreSQL + Chromium), ${i.finalize.perRound} per round`,
    `p50 ${fmt(i.finalize.p50, 1)} ms, **p95 ${fmt(i.finalize.p95, 1)} ms** (PDF ${kb(i.finalize.pdfBytes)})`,
    'p95 ≤ 1000 ms',
    when(i),
  ]);
  rows.push([
    'bare puppeteer render of the same HTML (`page.setContent` + `page.pdf`, warm page of its own browser), interleaved',
    `p50 ${fmt(i.bare.p50, 1)} ms, p95 ${fmt(i.bare.p95, 1)} ms`,
    '',
    when(i),
  ]);
  rows.push([
    'finalize / bare render, p50 (per round); p95',
    `**${fmt(i.p50Ratio, 2)}**; ${fmt(i.p95Ratio, 2)}`,
    'p50 ≤ 1.50',
    when(i),
  ]);
  rows.push([
    `\`GET …/preview-html\`, ${i.preview.lines}-line invoice (${kb(i.preview.htmlBytes)}), ${i.preview.perRound} sequential calls per round`,
    `p50 ${fmt(i.preview.p50, 2)} ms, **p99 ${fmt(i.preview.p99, 2)} ms**`,
    '≤ 50 ms',
    when(i),
  ]);
  rows.push(['the same preview, 8 connections', path(i.preview.load), '', when(i)]);
  rows.push([
    `\`POST …/generate-bulk\`, ${i.bulk.applications} active applications, ${i.bulk.worklogs} worklogs in the period (loaded through the ingest subject)`,
    `**${fmt(i.bulk.seconds, 2)} s**`,
    '≤ 10 s',
    when(i),
  ]);
  rows.push(['the same call again (all skipped)', `${fmt(i.bulk.repeatSeconds, 2)} s`, '', when(i)]);
}
if (latest.metrics) {
  begin('metrics');
  const m = latest.metrics;
  rows.push([
    `metric samples through agents (${m.ingest.agents}, their own NATS users) → JetStream → fleet consumer → VictoriaMetrics, ${m.ingest.samplesPerRound} per round`,
    `${fmt(m.ingest.pipeline)} samples/s`,
    '',
    when(m),
  ]);
  rows.push([
    "the same samples straight into VictoriaMetrics (`/api/v1/import`, the consumer's own lines built beforehand, 4 imports at a time)",
    `${fmt(m.ingest.raw)} samples/s`,
    '',
    when(m),
  ]);
  rows.push(['ingest pipeline / raw import', `**${fmt(m.ingest.ratio, 2)}**`, '≥ 0.50', when(m)]);
  const perK = m.ingest.cpuMsPer1kSamples;
  if (perK) {
    for (const p of ['pipeline', 'raw'] as const) {
      const total = Object.values(perK[p]).reduce((a, b) => a + b, 0);
      rows.push([
        `CPU per 1,000 samples, ${p}: ${Object.keys(perK[p]).join(', ')}`,
        `${Object.values(perK[p])
          .map((v) => v.toFixed(2))
          .join(', ')} ms (total ${total.toFixed(2)} ms)`,
        '',
        when(m),
      ]);
    }
  }
  const deferred = m.ingest.vmDeferredMsPer1kSamples;
  if (deferred)
    rows.push([
      "VictoriaMetrics' CPU per 1,000 samples after a round's clock stopped (flush, merges): pipeline, raw",
      `${deferred.pipeline.toFixed(2)}, ${deferred.raw.toFixed(2)} ms`,
      '',
      when(m),
    ]);
  if (m.ingest.steal)
    rows.push([
      'steal during the ingest rounds: pipeline, raw',
      `${pct(m.ingest.steal.pipeline)}, ${pct(m.ingest.steal.raw)}`,
      '',
      when(m),
    ]);
  const chartRows = (label: string, c: ChartFigures): void => {
    rows.push([
      `${label} (${c.points} points) through the gateway, ${c.calls} sequential calls per round`,
      `p50 ${fmt(c.gateway.p50, 2)} ms, p99 ${fmt(c.gateway.p99, 2)} ms`,
      '',
      when(m),
    ]);
    rows.push([
      `the same query_range straight to VictoriaMetrics, interleaved`,
      `p50 ${fmt(c.direct.p50, 2)} ms, p99 ${fmt(c.direct.p99, 2)} ms`,
      '',
      when(m),
    ]);
    rows.push([
      'for scale: `GET /hosts/:id` through the same gateway (no store), interleaved',
      `p50 ${fmt(c.hostRoute.p50, 2)} ms, p99 ${fmt(c.hostRoute.p99, 2)} ms`,
      '',
      when(m),
    ]);
    rows.push([
      `${label}: gateway / direct, p99 (p50)`,
      `**${fmt(c.p99Ratio, 2)}** (${fmt(c.p50Ratio, 2)})`,
      '≤ 1.50',
      when(m),
    ]);
    // Older results have no such figure; 0 means the machine runs no DAMON thread.
    if (c.kdamondMsPerS)
      rows.push([
        "the kernel's memory monitor (kdamond) during these calls",
        `${c.kdamondMsPerS.toFixed(1)} ms of CPU per second`,
        '',
        when(m),
      ]);
  };
  chartRows('`GET /hosts/:id/metrics/:name`, 6-hour chart, 1-minute buckets', m.chart6h);
  chartRows('`GET /hosts/:id/metrics/:name`, 24-hour chart, hourly buckets', m.chart24h);
  if (m.query) {
    const q = m.query;
    rows.push([
      `\`POST /metrics/query\`, 24 h at 10 s of 9 series, streamed (${(q.bytes / 1e6).toFixed(1)} MB), ${q.calls} sequential calls; straight to VictoriaMetrics`,
      `p50 ${q.gatewayP50.toFixed(1)} ms, p99 ${q.gatewayP99.toFixed(1)} ms; straight p50 ${q.directP50.toFixed(1)} ms, p99 ${q.directP99.toFixed(1)} ms`,
      '',
      when(m),
    ]);
  }
}
let chart: { svg: string } | undefined;
if (latest.fleet?.sizes) {
  begin('fleet');
  const c = latest.fleet;
  const run = `${c.at.slice(0, 16).replace('T', ' ')} UTC, one ${c.sizes[0]?.measureSeconds ?? 0}s window per size`;
  rows.push([
    `fleet ingest, scaling curve: ${c.sizes.map((f) => f.agents).join(', ')} simulated agents (heartbeat and metric batch every 10 s, ~365 KB snapshot every 5 min), each against a fresh ingesting process (identity + fleet + console gateway); chart: [fleet-scaling.png](fleet-scaling.png)`,
    `CPU per heartbeat at ${c.sizes.at(-1)?.agents} / at ${c.sizes[0]?.agents}: **${c.cpuPerHeartbeatGrowth.toFixed(2)}**`,
    '≤ 1.20',
    run,
  ]);
  for (const f of c.sizes) {
    const rate = (k: string): string => (f.messagesPerSecond[k] ?? 0).toFixed(1);
    rows.push([
      `fleet, ${f.agents} agents: stored per second; the ingesting process's CPU per heartbeat and per 1,000 samples, RSS`,
      `heartbeats ${rate('heartbeat')}${f.simulator ? ` of ${f.simulator.heartbeatsOffered.toFixed(0)} sent (simulator: ${f.simulator.processes} processes, ${(f.simulator.cores * 100).toFixed(0)}% of one core)` : ''}, metric batches ${rate('metrics')} (${f.samplesPerSecond.toFixed(0)} samples), snapshots ${rate('inventory')}; ${f.cpuMsPerHeartbeat.toFixed(2)} ms, ${f.cpuMsPer1000Samples.toFixed(2)} ms (${(f.cpuCores * 100).toFixed(0)}% of one core); ${f.rssMiB.mean.toFixed(0)} MiB mean, ${f.rssMiB.max.toFixed(0)} max`,
      '',
      run,
    ]);
    rows.push([
      `fleet, ${f.agents} agents: backlog of the telemetry consumers (pending + unacknowledged), first half avg, second half avg, max; lag from a heartbeat's publish to \`GET /api/v1/hosts/:id\` showing it (${f.lagMs.samples} probes)`,
      `backlog ${f.backlogFirstHalf}, **${f.backlogSecondHalf}**, ${f.backlogMax}${
        f.backlogByConsumer
          ? ` (second half by consumer: ${Object.entries(f.backlogByConsumer)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')})`
          : ''
      }; lag p50 ${f.lagMs.p50.toFixed(0)} ms, **p99 ${f.lagMs.p99.toFixed(0)} ms**${f.machine ? `; the machine ${f.machine.busyCores.toFixed(2)} of ${f.machine.cores} cores busy (PostgreSQL ${f.machine.postgres.toFixed(2)}, nats-server ${f.machine.natsServer.toFixed(2)}, VictoriaMetrics ${f.machine.victoriaMetrics.toFixed(2)})` : ''}`,
      'no backlog growth; p99 ≤ 2000 ms',
      run,
    ]);
    if (f.startup) {
      const st = f.startup;
      rows.push([
        `fleet, ${f.agents} agents, start-up (before the window above): every agent started at once, until each host is online; the backlog's peak and the probes' lag meanwhile (${st.lagMs.samples} probes)`,
        `${Number.isFinite(st.allOnlineSeconds) ? `every host online ${st.allOnlineSeconds.toFixed(1)} s after the simulator started` : 'not every host online within 5 minutes (the window includes the rest of the start-up)'}; backlog max ${st.backlogMax}; lag p50 ${st.lagMs.p50.toFixed(0)} ms, p99 ${st.lagMs.p99.toFixed(0)} ms, max ${st.lagMs.max.toFixed(0)} ms`,
        '',
        run,
      ]);
    }
  }
  chart = { svg: scalingChartSvg(c.sizes, `fleet ingest scaling, ${run}`) };
}
if (latest.search) {
  begin('search');
  const s = latest.search;
  const run = `${s.at.slice(0, 16).replace('T', ' ')} UTC, ${s.samples} sequential requests each`;
  for (const [who, figures] of [
    ['super admin', s.superAdmin],
    ['engineer on 10 of 60 clients', s.engineer],
  ] as const) {
    for (const f of figures) {
      rows.push([
        `PQL ${f.query} \`${f.q}\` over ${s.hosts} hosts (${s.packagesPerHost} packages each), ${who}: ${f.matches} matches; count, first page of 20`,
        `count p50 ${f.count.p50.toFixed(1)} ms, **p95 ${f.count.p95.toFixed(1)} ms**; page p50 ${f.page.p50.toFixed(1)} ms, **p95 ${f.page.p95.toFixed(1)} ms**`,
        'p95 ≤ 100 ms (count), ≤ 150 ms (page)',
        run,
      ]);
    }
  }
}
if (latest.events) {
  begin('events');
  const e = latest.events;
  if (e.receiver)
    rows.push([
      `receiver throughput: ${e.receiver.name}, gateway → NATS → events actor → JetStream ack`,
      `**${fmt(e.receiver.rps)} deliveries/s** accepted (202), p50 ${fmt(e.receiver.p50, 1)} ms, p99 ${fmt(e.receiver.p99, 1)} ms, non-2xx ${e.receiver.non2xx}`,
      '',
      when(e),
    ]);
  if (e.store)
    rows.push([
      'the delivery consumer storing them (deploy rows, events for the timeline)',
      `${e.store.deliveries} stored, backlog gone ${e.store.drainSeconds.toFixed(1)} s after the load, ${e.store.perSecond.toFixed(0)} stored/s overall`,
      '',
      when(e),
    ]);
  if (e.markerLag)
    rows.push([
      `lag from sending a delivery to its marker in \`GET /chart-markers\` (${e.markerLag.samples} sequential deliveries, no other load)`,
      `p50 ${e.markerLag.p50.toFixed(1)} ms, **p99 ${e.markerLag.p99.toFixed(1)} ms**`,
      '',
      when(e),
    ]);
  if (e.notes)
    rows.push([
      `\`GET /annotations\` of a host chart over 30 days, ${e.notes.total} notes in the client (${e.notes.returned} returned), ${e.notes.perRound} sequential calls per round`,
      `p50 ${fmt(e.notes.p50, 1)} ms, **p99 ${fmt(e.notes.p99, 1)} ms**`,
      '≤ 50 ms',
      when(e),
    ]);
}
if (latest.servicedesk) {
  begin('servicedesk');
  const d = latest.servicedesk;
  const run = `${d.at.slice(0, 16).replace('T', ' ')} UTC, ${d.samples} sequential requests per route`;
  for (const [name, r] of Object.entries(d.routes)) {
    rows.push([
      `service desk over ${d.rows} stored requests: ${name}; warm (same store generation), cold (changed before each request)`,
      `warm p50 ${r.warm.p50.toFixed(1)} ms, **p95 ${r.warm.p95.toFixed(1)} ms**; cold p50 ${r.cold.p50.toFixed(1)} ms, **p95 ${r.cold.p95.toFixed(1)} ms**`,
      'p95 ≤ 50 ms',
      run,
    ]);
  }
  const exportRun = `${d.at.slice(0, 16).replace('T', ' ')} UTC, ${d.export.calls ?? 5} sequential export calls after one warm-up`;
  rows.push([
    'service desk `reports/export`, 10,000 rows as CSV',
    `median ${d.export.median_ms.toFixed(0)} ms, worst **${d.export.max_ms.toFixed(0)} ms** (${(d.export.bytes / 1e6).toFixed(1)} MB)`,
    '≤ 1 s',
    exportRun,
  ]);
}
if (latest.agent) {
  begin('agent');
  const a = latest.agent;
  const run = `${a.at.slice(0, 16).replace('T', ' ')} UTC, ${a.rounds} rounds of ${a.seconds} s`;
  const mib = (x: Spread): string => `${fmt(x, 1)} MiB`;
  rows.push([
    `the packaged agent (\`npm run agent:package\`): the executable, the .deb`,
    `${a.executableMiB.toFixed(1)} MiB, ${a.debMiB.toFixed(1)} MiB`,
    '',
    run,
  ]);
  for (const [cache, what] of [
    ['cold', 'only what runs in the page cache, as after a reboot'],
    ['fresh', 'a freshly written executable, as right after `dpkg -i`, started as its unit starts it'],
  ] as const) {
    const c = a[cache];
    rows.push([
      `agent RSS after ${a.seconds} s of \`run\` (${what}): packaged (anonymous + file-backed); \`npm run agent\`, side by side`,
      `**${mib(c.packagedRssMiB)}** (${fmt(c.packagedAnonMiB, 1)} + ${fmt(c.packagedFileMiB, 1)}); ${mib(c.unbundledRssMiB)}`,
      '< 80 MiB',
      run,
    ]);
    rows.push([
      `packaged / \`npm run agent\`; the floor (a single executable built the same way that only connects over TLS and pings) and packaged / floor (${cache})`,
      `**${fmt(c.ratio, 2)}**; ${mib(c.floorRssMiB)}, ${fmt(c.toFloor, 2)}`,
      '≤ 1.20',
      run,
    ]);
  }
}
if (latest.memory) {
  begin('memory');
  const m = latest.memory;
  const run = `${m.at.slice(0, 16).replace('T', ' ')} UTC, ${m.rounds} rounds`;
  m.variants.forEach((v, i) => {
    rows.push([
      `idle RSS of the single process ${m.idleSeconds} s after it is ready: ${v.name}; its anonymous and file-backed parts; its child processes`,
      `**${fmt(v.rssMiB, 0)} MiB** (${fmt(v.anonMiB, 0)} + ${fmt(v.fileMiB, 0)}); children ${v.childrenMiB.mean.toFixed(0)} MiB`,
      // The target is for the process without chDB and without Chromium, the last shape.
      i === m.variants.length - 1 ? '≤ 286 MiB (300 MB)' : '',
      run,
    ]);
  });
}
if (latest.notifications) {
  begin('notifications');
  const n = latest.notifications;
  const run = `${n.at.slice(0, 16).replace('T', ' ')} UTC, ${n.rounds} rounds`;
  const r = n.rack;
  rows.push([
    `notifications: a rack of ${r.hosts.toLocaleString('en-US')} hosts offline at once, messages per channel (webhook, chat)`,
    `**${r.perChannel.webhook}, ${r.perChannel.chat}**; one notification counting ${r.counted} hosts`,
    '1 per rule and channel per grouping window',
    run,
  ]);
  rows.push([
    "notifications: the rack's first message after the rule's threshold",
    `**${(r.firstAfterThresholdMs / 1000).toFixed(2)} s**`,
    '≤ 5 s',
    run,
  ]);
  rows.push([
    'notifications: event loop lag of the ingesting process during the rack',
    `**p99 ${r.lagP99Ms.toFixed(1)} ms**, max ${r.lagMaxMs.toFixed(1)} ms`,
    '< 100 ms p99',
    run,
  ]);
  rows.push([
    `notifications: signed webhooks a second to a local receiver from one process (${n.throughput.deliveries} per round); a bare signing loop; ratio`,
    `**${fmt(n.throughput.perSecond, 0)}**; ${fmt(n.throughput.floorPerSecond, 0)}; ${fmt(n.throughput.ratio, 2)}`,
    '≥ 500/s',
    run,
  ]);
}
if (latest.web) {
  begin('web');
  const w = latest.web;
  const run = `${w.at.slice(0, 16).replace('T', ' ')} UTC, headless Chromium`;
  const ms = (t: Timing): string =>
    `**p50 ${t.p50.toFixed(1)} ms**, p95 ${t.p95.toFixed(1)} (${t.min.toFixed(1)}–${t.max.toFixed(1)}, ${t.samples} loads)`;
  rows.push([
    "web console: the first page's JavaScript, gzip",
    `**${w.firstPageJsGzipKb.toFixed(1)} kB**`,
    '≤ 200 kB',
    run,
  ]);
  rows.push(['web console: the sign-in page interactive after navigation (cold)', ms(w.signInInteractive), '', run]);
  rows.push([
    `web console: the hosts table over ${w.hosts.toLocaleString('en-US')} hosts, first rows after the search's response`,
    ms(w.hostsFirstRows),
    '≤ 300 ms',
    run,
  ]);
  rows.push([
    'web console: the hosts table scrolled 40 px a frame for 3 s, frame interval',
    `**p50 ${w.scroll.p50.toFixed(1)} ms**, p99 ${w.scroll.p99.toFixed(1)}, max ${w.scroll.max.toFixed(1)}; ${w.scroll.dropped} of ${w.scroll.frames} frames over 1.5 × p50`,
    'no dropped frames',
    run,
  ]);
  rows.push([
    `web console: a host's four charts over 24 h (${w.chart24h.points} hourly buckets, the finest the chart route gives), the slowest from its response to drawn`,
    ms(w.chart24h),
    '≤ 100 ms',
    run,
  ]);
  rows.push([`web console: the same over 6 h (${w.chart6h.points} one-minute buckets)`, ms(w.chart6h), '', run]);
}
const fresh = new Map(
  parts.map(([part, from], i) => [
    part,
    rows
      .slice(from, parts[i + 1]?.[1] ?? rows.length)
      .map((r) => `| ${[...r.slice(0, -1), `${part}: ${r[r.length - 1]}`].join(' | ')} |`),
  ]),
);
const doc = readFileSync(REPORT_DOC, 'utf8');
const table = [TABLE_HEADER, '|---|---|---|---|', ...mergeFiguresRows(figuresRows(doc), fresh)];
console.log(table.join('\n'));
writeFileSync(REPORT_DOC, replaceFiguresTable(doc, table));
console.error(
  `bench:report: ${rows.length} rows of ${[...fresh.keys()].join(', ') || 'no part'} written to ${REPORT_DOC}; the other parts' rows kept`,
);
if (chart) {
  await svgToPng(chart.svg, SCALING_CHART, process.env.SVC_CHROMIUM_PATH ?? '/usr/bin/chromium');
  console.error(`bench:report: the fleet's scaling curve drawn in ${SCALING_CHART}`);
}
