// `npm run bench [-- <part>...]`: measures side by side in one run and prints ratios with their spread over interleaved
// rounds. Parts: hop, runtime, login, me, resolve, signing, invoice, fleet, search, metrics, servicedesk, events, notifications, agent, memory, web (all by default). Not a test: nothing here fails a build.
import { allEntities } from '../actors/index.ts';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import argon2 from 'argon2';
import { generateSecret } from 'otplib';
import { AccessTokens, SecretBox } from '../actors/identity/crypto.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { connectNats } from '../platform/nats.ts';
import { Caller } from '../platform/call.ts';
import { contextSigner } from '../platform/signing.ts';
import { Stores } from '../platform/stores/index.ts';
import { catalogue } from '../contracts/catalogue.ts';
import { anonymousContext } from '../contracts/context.ts';
import { agentBench } from './agent.ts';
import { benchContext } from './fixtures.ts';
import { eventsBench } from './events.ts';
import { notificationsBench } from './notifications.ts';
import { fleetBench } from './fleet.ts';
import { memoryBench } from './memory.ts';
import { invoiceBench } from './invoice.ts';
import { metricsBench } from './metrics.ts';
import { runtimeBench } from './runtime.ts';
import { searchBench } from './search.ts';
import { webBench } from './web.ts';
import { servicedeskBench } from './servicedesk.ts';
import { load, type LoadResult } from './load.ts';
import {
  figures,
  fmt,
  hopSteps,
  pathTable,
  pct,
  percentile,
  ratios,
  spread,
  type PathFigures,
  type Spread,
} from './stats.ts';
import { useBenchNamespace } from './namespace.ts';
import { cpuMeter, perRequest, stealMeter, threadMeter, type ProcessGroup } from './cpu.ts';
import { startFlags } from '../scripts/start-flags.ts';
import { checkpoint } from './checkpoint.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const GATEWAY_PORT = 18080;
const DIRECT_PORT = 18090;
const SPLIT_GATEWAY_PORT = 18081;
/** The direct server's second app: the console gateway's stack with the handler in-process (bench/direct-server.ts). */
const GATEWAY_NOHOP_PORT = 18091;
/** Its third and fourth: the same stack with a bare NATS hop, and with the runtime's hop to an actor of its own. */
const GATEWAY_BAREHOP_PORT = 18092;
const GATEWAY_RUNTIME_PORT = 18093;
/** The peer, Moleculer (bench/moleculer-server.ts): gateway and service in one process, and the split gateway. */
const MOLECULER_PORT = 18095;
const MOLECULER_SPLIT_PORT = 18096;
/**
 * The hop part's warm-up of each path. A process under this load takes 20–30 s to settle (docs/benchmarks.md), and the
 * paths one process serves (the direct server's five) warm each other, so a short warm-up counted the first rounds of
 * the processes serving one path before they had settled.
 */
const HOP_WARMUP_SECONDS = Number(process.env.BENCH_HOP_WARMUP_SECONDS ?? 20);
/** How long the hop part meters its processes with no load, after its rounds. */
const IDLE_SECONDS = 10;

// Before the config is read and any child starts: they all inherit the bench's namespace.
const namespace = useBenchNamespace();
const config = loadConfig();
const log = createLogger('warn');
const stores = new Stores(config, log, { entities: allEntities });
const children: ChildProcess[] = [];

/** start.sh's node flags, or none on a runtime that does not know them (`bench:runtimes`' older Node). */
let checkedFlags: string[] | undefined;
function systemFlags(): string[] {
  if (checkedFlags) return checkedFlags;
  const { flags } = startFlags();
  checkedFlags = spawnSync(process.execPath, [...flags, '-e', '0']).status === 0 ? flags : [];
  if (checkedFlags.length < flags.length)
    console.log(`bench: ${process.version} does not take ${flags.join(' ')}: its systems run without`);
  return checkedFlags;
}

/** Starts `node <args>` and resolves once `readyUrl` answers. */
async function startChild(args: string[], env: Record<string, string>, readyUrl: string): Promise<ChildProcess> {
  // BENCH_CPU_PROF=<dir>: every process the bench starts writes a V8 CPU profile there when it stops
  // (summarise one with `node bench/profile-summary.ts <file>`).
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // BENCH_NODE_FLAGS: more flags for them, e.g. `--trace-gc` or `--heap-prof --heap-prof-dir=/tmp/heap`.
  prof.push(...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== ''));
  // NODE_OPTIONS and node's flags as `npm start` sets them, so the processes measured run as the started system does.
  const start = startFlags();
  const nodeOptions = `${start.nodeOptions}${process.env.NODE_OPTIONS ? ` ${process.env.NODE_OPTIONS}` : ''}`;
  // The system and the bare paths it is compared with (direct-server.ts) alike; the agents run as their unit starts them.
  if (['main.ts', 'bench/direct-server.ts', 'bench/moleculer-server.ts'].includes(args[0]!))
    prof.unshift(...systemFlags());
  const child = spawn(process.execPath, [...prof, ...args], {
    env: { ...process.env, NODE_OPTIONS: nodeOptions, SVC_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.push(child);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  if (!readyUrl) return child;
  for (let i = 0; i < 300; i++) {
    if (exited !== undefined) throw new Error(`${args.join(' ')} exited with ${exited}`);
    try {
      if ((await fetch(readyUrl)).status < 500) return child;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${args.join(' ')} did not answer on ${readyUrl}`);
}

/**
 * Starts metering the CPU of the system's processes (every child the bench started that still runs) and PostgreSQL,
 * for the latency parts' CPU per request: a runtime that answers as fast while spending more shows here.
 */
const systemCpu = (): (() => Record<string, number>) =>
  cpuMeter([
    {
      name: 'system',
      pids: () => children.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => c.pid!),
    },
    { name: 'postgres', comm: /^postgres$/ },
  ]);

/** A super admin with MFA enrolled, 60 clients to list, and a token for it. */
async function seed(): Promise<{ token: string; userId: string; email: string; password: string; mfaSecret: string }> {
  const orm = await stores.orm();
  const conn = orm.em.fork().getConnection();
  const userId = randomUUID();
  const email = `bench-${userId.slice(0, 8)}@example.com`;
  const password = 'bench password 0123456789';
  const box = new SecretBox(config.SVC_MFA_ENCRYPTION_KEY!);
  const mfaSecret = generateSecret();
  await conn.execute(
    `INSERT INTO users (id, email, display_name, status, is_super_admin, password_hash, mfa_enabled, mfa_secret_enc) VALUES (?, ?, 'Bench', 'active', true, ?, true, ?)`,
    [userId, email, await argon2.hash(password, { type: argon2.argon2id }), box.seal(mfaSecret)],
  );
  const existing = await conn.execute<{ n: string }[]>(
    `SELECT count(*)::text AS n FROM clients WHERE slug LIKE 'bench-%'`,
  );
  for (let i = Number(existing[0]?.n ?? 0); i < 60; i++)
    await conn.execute(`INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [
      randomUUID(),
      `Bench ${i}`,
      `bench-${i}`,
    ]);
  const sessionId = randomUUID();
  await conn.execute(
    `INSERT INTO sessions (id, user_id, last_active_at, expires_at) VALUES (?, ?, now(), now() + interval '1 day')`,
    [sessionId, userId],
  );
  const token = await new AccessTokens(config.SVC_JWT_SECRET!, 3600).sign({ sub: userId, sid: sessionId, email });
  return { token, userId, email, password, mfaSecret };
}

/**
 * One warm-up (not counted), then ROUNDS interleaved rounds of every path: each round runs them back to back. With
 * `groups`, each counted round also records the CPU per request of each process group (bench/cpu.ts).
 */
async function interleaved(
  paths: { name: string; url: string; groups?: ProcessGroup[]; threadsOf?: () => number }[],
  headers: Record<string, string>,
  warmupSeconds = Math.min(3, SECONDS),
): Promise<LoadResult[][]> {
  for (const p of paths) await load(p.name, p.url, { headers, seconds: warmupSeconds, connections: CONNECTIONS });
  const rounds: LoadResult[][] = paths.map(() => []);
  // Every other round runs the paths in reverse order, so a machine that slows down or speeds up during the run
  // weighs on each path alike; paths compared with each other are listed next to each other for the same reason.
  for (let r = 0; r < ROUNDS; r++)
    for (const [i, p] of r % 2 === 0 ? [...paths.entries()] : [...paths.entries()].reverse()) {
      const meter = p.groups ? cpuMeter(p.groups) : undefined;
      const threads = p.threadsOf ? threadMeter(p.threadsOf) : undefined;
      const stolen = stealMeter();
      const result = await load(p.name, p.url, { headers, seconds: SECONDS, connections: CONNECTIONS });
      result.steal = stolen();
      const used = meter?.();
      const perReq = (ms: Record<string, number>): Record<string, number> =>
        Object.fromEntries(Object.entries(ms).map(([k, v]) => [k, v / Math.max(1, result.total)]));
      if (used) result.cpu = perReq(used);
      if (threads) result.threads = perReq(threads());
      rounds[i]!.push(result);
    }
  return rounds;
}

function cpuTable(rows: Record<string, Record<string, Spread>>): string {
  // Every column any row has (threads differ by process), in the order first met.
  const cols = [...new Set(Object.values(rows).flatMap((r) => Object.keys(r)))];
  const lines = Object.entries(rows).map(([path, cpu]) => [
    path,
    ...cols.map((c) => (cpu[c] ? fmt(cpu[c], 3) : '–')),
    Object.values(cpu)
      .reduce((a, s) => a + s.mean, 0)
      .toFixed(3),
  ]);
  const head = ['path', ...cols, 'total'];
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [head, ...lines].map((cells) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ')).join('\n');
}

/**
 * Mean CPU ms per request of each thread kind over the rounds of one path (a kind absent from a round counts 0 there),
 * the main thread first, then by cost.
 */
function threadRow(rounds: LoadResult[]): Record<string, Spread> {
  const names = [...new Set(rounds.flatMap((r) => Object.keys(r.threads ?? {})))];
  const row = Object.fromEntries(names.map((n) => [n, spread(rounds.map((r) => r.threads?.[n] ?? 0))]));
  return Object.fromEntries(
    Object.entries(row).sort(([a, x], [b, y]) => (a === 'MainThread' ? -1 : b === 'MainThread' ? 1 : y.mean - x.mean)),
  );
}

/** The steal share of each round of one path. */
const stealOf = (rounds: LoadResult[]): Spread => spread(rounds.map((r) => r.steal ?? 0));

/** Mean CPU ms per request of each process group over the rounds of one path, as a table row. */
function cpuRow(rounds: LoadResult[]): Record<string, Spread> {
  const names = Object.keys(rounds[0]?.cpu ?? {});
  return Object.fromEntries(names.map((n) => [n, spread(rounds.map((r) => r.cpu?.[n] ?? 0))]));
}

/** The cost of the NATS hop: the same authenticated list through the actor path (both shapes) and the bare path. */
async function hop(token: string): Promise<Record<string, unknown>> {
  const [system, splitProcesses, bare, peer, peerSplit] = await Promise.all([
    single(),
    split(),
    direct(),
    moleculer(),
    moleculerSplit(),
  ]);
  const headers = { authorization: `Bearer ${token}` };
  // Everything else the machine runs for these paths, metered the same way for each.
  const shared: ProcessGroup[] = [
    { name: 'nats-server', comm: /^nats-server$/ },
    { name: 'postgres', comm: /^postgres$/ },
    { name: 'valkey', comm: /^redis-server$/ },
    { name: 'load generator', pids: () => [process.pid] },
  ];
  const own = (name: string, ps: ChildProcess[]): ProcessGroup[] => [
    { name: `${name}`, pids: () => ps.map((p) => p.pid!) },
    ...shared,
  ];
  const [runtimeHop, one, molOne, two, molTwo, floor, bareHop, noHop, viaBare] = await interleaved(
    [
      {
        name: 'gateway stack → runtime hop → fleet list handler alone, in one process → PG',
        url: `http://127.0.0.1:${GATEWAY_RUNTIME_PORT}/api/v1/clients`,
        groups: own('system', [bare]),
        threadsOf: () => bare.pid!,
      },
      {
        name: 'single process: gateway → NATS → actor → PG',
        url: `http://127.0.0.1:${GATEWAY_PORT}/api/v1/clients`,
        groups: own('system', [system]),
        threadsOf: () => system.pid!,
      },
      {
        name: 'Moleculer, one process: moleculer-web broker → NATS (TLS) → service broker → PG',
        url: `http://127.0.0.1:${MOLECULER_PORT}/api/v1/clients`,
        groups: own('system', [peer]),
        threadsOf: () => peer.pid!,
      },
      {
        name: 'split: gateway process → NATS → actor process → PG',
        url: `http://127.0.0.1:${SPLIT_GATEWAY_PORT}/api/v1/clients`,
        groups: own('system', splitProcesses),
      },
      {
        name: 'Moleculer, split: moleculer-web process → NATS (TLS) → service process → PG',
        url: `http://127.0.0.1:${MOLECULER_SPLIT_PORT}/api/v1/clients`,
        groups: own('system', peerSplit),
      },
      {
        name: 'floor: bare Fastify → bare NATS request → PG',
        url: `http://127.0.0.1:${DIRECT_PORT}/floor/clients`,
        groups: own('system', [bare]),
        threadsOf: () => bare.pid!,
      },
      {
        name: 'gateway stack → bare NATS request → PG',
        url: `http://127.0.0.1:${GATEWAY_BAREHOP_PORT}/api/v1/clients`,
        groups: own('system', [bare]),
      },
      {
        name: 'gateway stack, no hop: the console gateway app → handler in-process → PG',
        url: `http://127.0.0.1:${GATEWAY_NOHOP_PORT}/api/v1/clients`,
        groups: own('system', [bare]),
      },
      {
        name: 'bare Fastify → PG',
        url: `http://127.0.0.1:${DIRECT_PORT}/api/v1/clients`,
        groups: own('system', [bare]),
      },
    ],
    headers,
    HOP_WARMUP_SECONDS,
  );
  // What each process spends with no request at all (timers, consumers' pulls and heartbeats, pings), metered after
  // the rounds: at the path's throughput, it is part of the CPU per request its rounds measured.
  const idleMeter = cpuMeter([
    { name: 'single', pids: () => [system.pid!] },
    { name: 'split', pids: () => splitProcesses.map((p) => p.pid!) },
    { name: 'bare', pids: () => [bare.pid!] },
    { name: 'moleculer', pids: () => [peer.pid!] },
    { name: 'moleculerSplit', pids: () => peerSplit.map((p) => p.pid!) },
  ]);
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  const idleMsPerSecond = Object.fromEntries(
    Object.entries(idleMeter()).map(([k, ms]) => [k, Number((ms / IDLE_SECONDS).toFixed(2))]),
  );
  const result = {
    idleMsPerSecond,
    single: figures(one!),
    split: figures(two!),
    floor: figures(floor!),
    direct: figures(viaBare!),
    noHop: figures(noHop!),
    bareHop: figures(bareHop!),
    runtimeHop: figures(runtimeHop!),
    moleculer: figures(molOne!),
    moleculerSplit: figures(molTwo!),
    singleToMoleculerThroughputRatio: ratios(one!, molOne!, (r) => r.rps),
    singleToMoleculerP99Ratio: ratios(one!, molOne!, (r) => r.p99),
    splitToMoleculerThroughputRatio: ratios(two!, molTwo!, (r) => r.rps),
    splitToMoleculerP99Ratio: ratios(two!, molTwo!, (r) => r.p99),
    noHopThroughputRatio: ratios(noHop!, viaBare!, (r) => r.rps),
    noHopP99Ratio: ratios(noHop!, viaBare!, (r) => r.p99),
    singleToNoHopThroughputRatio: ratios(one!, noHop!, (r) => r.rps),

    singleToNoHopP99Ratio: ratios(one!, noHop!, (r) => r.p99),
    floorThroughputRatio: ratios(floor!, viaBare!, (r) => r.rps),
    floorP99Ratio: ratios(floor!, viaBare!, (r) => r.p99),
    singleToFloorThroughputRatio: ratios(one!, floor!, (r) => r.rps),
    singleToFloorP99Ratio: ratios(one!, floor!, (r) => r.p99),
    singleThroughputRatio: ratios(one!, viaBare!, (r) => r.rps),
    singleP99Ratio: ratios(one!, viaBare!, (r) => r.p99),
    splitThroughputRatio: ratios(two!, viaBare!, (r) => r.rps),
    splitP99Ratio: ratios(two!, viaBare!, (r) => r.p99),
    cpuPerRequest: {
      single: cpuRow(one!),
      split: cpuRow(two!),
      floor: cpuRow(floor!),
      noHop: cpuRow(noHop!),
      bareHop: cpuRow(bareHop!),
      runtimeHop: cpuRow(runtimeHop!),
      direct: cpuRow(viaBare!),
      moleculer: cpuRow(molOne!),
      moleculerSplit: cpuRow(molTwo!),
    },
    // The process's CPU per request by thread kind: which threads the single process's extra time runs on.
    cpuByThread: {
      single: threadRow(one!),
      runtimeHop: threadRow(runtimeHop!),
      floor: threadRow(floor!),
      moleculer: threadRow(molOne!),
    },
    steal: {
      single: stealOf(one!),
      split: stealOf(two!),
      floor: stealOf(floor!),
      noHop: stealOf(noHop!),
      bareHop: stealOf(bareHop!),
      runtimeHop: stealOf(runtimeHop!),
      direct: stealOf(viaBare!),
      moleculer: stealOf(molOne!),
      moleculerSplit: stealOf(molTwo!),
    },
  };
  console.log(
    `\n## hop: authenticated GET /api/v1/clients, ${CONNECTIONS} connections, warm-up + ${ROUNDS}×${SECONDS}s interleaved`,
  );
  console.log(
    pathTable([
      result.single,
      result.split,
      result.moleculer,
      result.moleculerSplit,
      result.floor,
      result.bareHop,
      result.runtimeHop,
      result.noHop,
      result.direct,
    ]),
  );
  const met = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  const cpu = result.cpuPerRequest;
  const cpuGap = (cpu.single.system?.mean ?? NaN) - (cpu.floor.system?.mean ?? NaN);
  console.log(
    `single process / Moleculer one process: throughput ${fmt(result.singleToMoleculerThroughputRatio, 2)} (target ≥ 1.10: ${met(result.singleToMoleculerThroughputRatio.mean >= 1.1)})   p99 ${fmt(result.singleToMoleculerP99Ratio, 2)} (target ≤ 0.90: ${met(result.singleToMoleculerP99Ratio.mean <= 0.9)})`,
  );
  console.log(
    `split / Moleculer split:                throughput ${fmt(result.splitToMoleculerThroughputRatio, 2)} (target ≥ 1.10: ${met(result.splitToMoleculerThroughputRatio.mean >= 1.1)})   p99 ${fmt(result.splitToMoleculerP99Ratio, 2)} (target ≤ 0.90: ${met(result.splitToMoleculerP99Ratio.mean <= 0.9)})`,
  );
  console.log(
    `single process / floor throughput ${fmt(result.singleToFloorThroughputRatio, 2)} (target ≥ 0.85: ${met(result.singleToFloorThroughputRatio.mean >= 0.85)}); system CPU per request ${cpuGap.toFixed(3)} ms above the floor's (target ≤ 0.150: ${met(cpuGap <= 0.15)})`,
  );
  console.log(
    `single process / bare: throughput ${fmt(result.singleThroughputRatio, 2)} (target ≥ 0.80)   p99 ${fmt(result.singleP99Ratio, 2)} (target ≤ 1.50)`,
  );
  console.log(
    `split / bare:          throughput ${fmt(result.splitThroughputRatio, 2)}   p99 ${fmt(result.splitP99Ratio, 2)}`,
  );
  console.log(
    `floor / bare:          throughput ${fmt(result.floorThroughputRatio, 2)}   p99 ${fmt(result.floorP99Ratio, 2)}   (one bare NATS request-reply, nothing else)`,
  );
  console.log(
    `single process / floor: throughput ${fmt(result.singleToFloorThroughputRatio, 2)}   p99 ${fmt(result.singleToFloorP99Ratio, 2)}   (the system's path against the transport's floor)`,
  );
  console.log(
    `gateway stack without the hop / bare: throughput ${fmt(result.noHopThroughputRatio, 2)}   p99 ${fmt(result.noHopP99Ratio, 2)}   (the gateway's own hooks, validation and logging)`,
  );
  console.log(
    `single process / gateway stack without the hop: throughput ${fmt(result.singleToNoHopThroughputRatio, 2)}   p99 ${fmt(result.singleToNoHopP99Ratio, 2)}   (the hop alone)`,
  );
  const idlePerRequest = (ms: number, rps: number): string => (ms / rps).toFixed(3);
  console.log(
    `idle CPU, ms per second with no request (${IDLE_SECONDS} s after the rounds), and what it adds per request at the path's throughput: ${(
      [
        ['single', result.single],
        ['split', result.split],
        ['bare', result.floor],
        ['moleculer', result.moleculer],
        ['moleculerSplit', result.moleculerSplit],
      ] as const
    )
      .map(([k, f]) => `${k} ${idleMsPerSecond[k]} ms/s (${idlePerRequest(idleMsPerSecond[k]!, f.rps.mean)} ms)`)
      .join(', ')}`,
  );
  console.log(`CPU ms per request, by process (mean of the rounds, min–max):`);
  console.log(cpuTable(result.cpuPerRequest));
  console.log(`the process's own CPU ms per request, by thread (mean of the rounds, min–max):`);
  console.log(cpuTable(result.cpuByThread));
  const steps = hopSteps(cpu);
  if (steps)
    console.log(
      `single process above bare, by step (system CPU ms per request): ${steps.map((s) => `${s.step} ${s.ms.toFixed(3)}`).join(', ')}`,
    );
  console.log(
    `steal (the machine's CPU time taken by other tenants) during each path's rounds: ${Object.entries(result.steal)
      .map(([k, s]) => `${k} ${pct(s)}`)
      .join(', ')}`,
  );
  return result;
}

/** Logins against raw argon2id verifications at the same parallelism (4, the hasher's cap), interleaved. */
async function login(): Promise<Record<string, unknown>> {
  await single();
  const orm = await stores.orm();
  const conn = orm.em.fork().getConnection();
  // Users without MFA log in with one step (200 + tokens): the login path is then only the hash plus bookkeeping.
  // Eight accounts, because the lockout refuses more than a few attempts in flight for one account at a time.
  const password = 'bench login password 0123';
  const hash = await argon2.hash(password, { type: argon2.argon2id });
  const loginEmails: string[] = [];
  for (let i = 0; i < 8; i++) {
    const email = `bench-login-${randomUUID().slice(0, 8)}@example.com`;
    loginEmails.push(email);
    await conn.execute(
      `INSERT INTO users (id, email, display_name, status, password_hash) VALUES (?, ?, 'Login', 'active', ?)`,
      [randomUUID(), email, hash],
    );
  }
  const raw = async (seconds: number): Promise<number> => {
    const end = Date.now() + seconds * 1000;
    let count = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < end) {
          await argon2.verify(hash, password);
          count++;
        }
      }),
    );
    return count / seconds;
  };
  const logins = (seconds: number): Promise<LoadResult> =>
    load('POST /auth/login', `http://127.0.0.1:${GATEWAY_PORT}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      bodies: loginEmails.map((email) => JSON.stringify({ email, password })),
      seconds,
      connections: 8,
    });
  await raw(2);
  await logins(2);
  const rawRounds: number[] = [];
  const loginRounds: LoadResult[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    rawRounds.push(await raw(SECONDS));
    loginRounds.push(await logins(SECONDS));
  }
  const result = {
    login: figures(loginRounds),
    raw: spread(rawRounds),
    ratio: spread(loginRounds.map((l, i) => l.rps / rawRounds[i]!)),
  };
  console.log(
    `\n## login: POST /auth/login (8 accounts without MFA, 8 connections) vs raw argon2id, warm-up + ${ROUNDS}×${SECONDS}s interleaved`,
  );
  console.log(pathTable([result.login]));
  console.log(
    `raw argon2id verifications/s (4 parallel): ${fmt(result.raw, 1)}   login/raw: ${fmt(result.ratio, 2)} (target ≥ 0.90)`,
  );
  return result;
}

async function me(token: string): Promise<Record<string, unknown>> {
  await single();
  const [rounds] = await interleaved(
    [{ name: 'GET /auth/me (warm cache)', url: `http://127.0.0.1:${GATEWAY_PORT}/api/v1/auth/me` }],
    { authorization: `Bearer ${token}` },
  );
  const result = figures(rounds!);
  console.log(`\n## me: GET /auth/me, warm access cache, warm-up + ${ROUNDS}×${SECONDS}s`);
  console.log(pathTable([result]));
  return { me: result };
}

/** Permission resolution straight on its subject: cold (cache entry dropped before each call) and warm. */
async function resolve(userId: string): Promise<Record<string, unknown>> {
  await single();
  const nc = await connectNats(config.SVC_NATS_URL, 'bench', log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
  const caller = new Caller(() => nc, catalogue, contextSigner(config));
  const kv = await stores.kv();
  const times = async (n: number, before?: () => Promise<unknown>): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      if (before) await before();
      const t0 = performance.now();
      await caller.call('svc.identity.access.resolve', { user_id: userId }, anonymousContext(randomUUID()));
      out.push(performance.now() - t0);
    }
    return out.sort((x, y) => x - y);
  };
  // The floor: a bare request-reply to an echo on another connection of this process (no envelope, no store).
  const echoNc = await connectNats(config.SVC_NATS_URL, 'bench-echo', log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
  const echoSubject = `${namespace}.svc.bench.echo`;
  echoNc.subscribe(echoSubject, { callback: (_e, m) => void m.respond(m.data) });
  await echoNc.flush();
  const echoPayload = new TextEncoder().encode(JSON.stringify({ user_id: userId }));
  const bareTimes = async (n: number): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await nc.request(echoSubject, echoPayload, { timeout: 5000 });
      out.push(performance.now() - t0);
    }
    return out.sort((x, y) => x - y);
  };
  // The warm-up is a whole round, not counted: the first cold calls (the database path, its compilation and the garbage
  // it leaves) slowed the warm round after them, so only the first round ever showed a tail of that kind.
  await times(500, () => kv.del(`access:user:${userId}`));
  await times(2000);
  await bareTimes(2000);
  const cold: number[][] = [];
  const warm: number[][] = [];
  const bare: number[][] = [];
  const warmCpu: Record<string, number>[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    cold.push(await times(500, () => kv.del(`access:user:${userId}`)));
    const meter = systemCpu();
    warm.push(await times(2000));
    warmCpu.push(perRequest(meter, 2000));
    bare.push(await bareTimes(2000));
  }
  await echoNc.drain();
  await nc.drain();
  const at = (rounds: number[][], p: number): Spread => spread(rounds.map((xs) => percentile(xs, p)));
  const result = {
    cold: { p50: at(cold, 50), p99: at(cold, 99) },
    warm: { p50: at(warm, 50), p99: at(warm, 99) },
    bare: { p50: at(bare, 50), p99: at(bare, 99) },
    /** CPU ms per warm call: the system's process (the identity actor) and PostgreSQL (none when warm). */
    warmCpuPerCall: {
      system: spread(warmCpu.map((c) => c.system!)),
      postgres: spread(warmCpu.map((c) => c.postgres!)),
    },
  };
  console.log(
    `\n## resolve: svc.identity.access.resolve over NATS, ${ROUNDS} rounds (500 cold, 2000 warm calls each), ms`,
  );
  console.log(
    `cold p50 ${fmt(result.cold.p50, 2)}  p99 ${fmt(result.cold.p99, 2)}   warm p50 ${fmt(result.warm.p50, 2)}  p99 ${fmt(result.warm.p99, 2)} (target warm p99 ≤ 2 ms)`,
  );
  console.log(
    `floor, a bare NATS request-reply to an echo (2000 calls per round): p50 ${fmt(result.bare.p50, 2)}  p99 ${fmt(result.bare.p99, 2)}`,
  );
  console.log(`CPU per warm call: the system ${fmt(result.warmCpuPerCall.system, 3)} ms`);
  return result;
}

/**
 * What signing costs: sign (caller) plus verify (actor) of the envelope the hop part sends, timed in this process,
 * as a share of the CPU one actor-path request takes (one core's time divided by the single-process throughput of the
 * hop part, when it ran in this invocation; otherwise of the last recorded run).
 */
async function signing(): Promise<Record<string, unknown>> {
  // A gateway's signer (no actor of its process serves the subject) with another process's verifier (same key, another
  // instance): the MAC is computed on both sides. Apart: a signer whose process serves the subject (ActorHost.serve
  // registers it), verifying its own request by comparison with what it signed.
  const remote = contextSigner(config);
  const elsewhere = contextSigner(config);
  const local = contextSigner(config);
  const ctx = benchContext();
  const payload = new TextEncoder().encode(
    JSON.stringify({ ctx, input: { page: 1, per_page: 20, sort: 'name', order: 'asc' } }),
  );
  const subject = 'bench.svc.fleet.clients.list';
  local.servesHere(subject);
  type Signer = typeof local;
  const once = (signer: Signer, verifier: Signer): void => {
    const deadline = Date.now() + 10_000;
    const s = signer.sign(subject, ctx.request_id, deadline, payload);
    if (!verifier.verify(subject, ctx.request_id, String(deadline), s.signedAt, s.signature, payload).ok)
      throw new Error('signature did not verify');
  };
  const time = (signer: Signer, verifier: Signer): number[] => {
    for (let i = 0; i < 20_000; i++) once(signer, verifier);
    const perRound: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const n = 100_000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) once(signer, verifier);
      perRound.push(((performance.now() - t0) * 1000) / n);
    }
    return perRound;
  };
  const micros = spread(time(remote, elsewhere));
  const localMicros = spread(time(local, local));
  const rps =
    (results.hop as { single?: PathFigures } | undefined)?.single?.rps.mean ??
    (previous.hop as { single?: { rps: Spread } } | undefined)?.single?.rps.mean;
  const share = rps ? (micros.mean * rps) / 1e6 : undefined;
  console.log(`\n## signing: HMAC-SHA256 sign + verify of a ${payload.length}-byte envelope, ${ROUNDS}×100k`);
  console.log(
    `µs per request, verified in another process: ${fmt(micros, 2)}${share !== undefined ? `   share of an actor-path request's CPU at ${rps!.toFixed(0)} req/s: ${(share * 100).toFixed(2)}% (target < 3%)` : ''}`,
  );
  console.log(
    `µs per request, verified in the signing process (comparison with what it signed): ${fmt(localMicros, 2)}`,
  );
  return { micros, localMicros, payloadBytes: payload.length, share };
}

/** Invoicing: finalize with its PDF vs a bare render, preview-html of 200 lines, generate-bulk of 1,000 (bench/invoice.ts). */
async function invoice(token: string): Promise<Record<string, unknown>> {
  const nc = await connectNats(config.SVC_NATS_URL, 'bench-invoice', log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
  try {
    return {
      ...(await invoiceBench({ config, stores, nc, token, rounds: ROUNDS, seconds: SECONDS, start: startChild, env })),
    };
  } finally {
    await nc.drain();
  }
}

/** Idle memory of `npm start`'s process, with and without chDB and the invoice domain (bench/memory.ts). */
async function memory(): Promise<Record<string, unknown>> {
  return {
    ...(await memoryBench({
      start: startChild,
      dropNamespace: (ns) => dropDurables(`-${ns}`),
      namespace,
      rounds: ROUNDS,
    })),
  };
}

/** Fleet ingest: the scaling curve of simulated agents against one ingesting process per size (bench/fleet.ts). */
async function fleet(token: string): Promise<Record<string, unknown>> {
  return { ...(await fleetBench({ config, stores, token, log, start: startChild, env })) };
}

/** Host search: PQL count and first page over 100,000 seeded hosts (bench/search.ts). */
const search = async (token: string): Promise<Record<string, unknown>> => ({
  ...(await searchBench({ config, stores, token, ensureSystem: single, gatewayPort: GATEWAY_PORT, systemCpu })),
});

/** The web console in headless Chromium: its first page, the hosts table, a host's charts (bench/web.ts). */
const web = async (): Promise<Record<string, unknown>> => ({
  ...(await webBench({ config, stores, ensureSystem: single, gatewayPort: GATEWAY_PORT, user: benchUser! })),
});

/** Metrics: ingest through agents and JetStream vs a raw import, host charts via the gateway vs straight (bench/metrics.ts). */
async function metrics(token: string): Promise<Record<string, unknown>> {
  return { ...(await metricsBench({ config, stores, token, log, rounds: ROUNDS, start: startChild, env })) };
}

/** Service desk: the read routes over 100,000 stored requests, and a 10,000-row CSV export (bench/servicedesk.ts). */
async function servicedesk(token: string): Promise<Record<string, unknown>> {
  return { ...(await servicedeskBench({ config, stores, token, start: startChild, env, systemCpu })) };
}

/** Events: receiver throughput, store drain, delivery-to-marker lag, notes list of a host chart (bench/events.ts). */
async function events(token: string): Promise<Record<string, unknown>> {
  const nc = await connectNats(config.SVC_NATS_URL, 'bench-events', log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
  try {
    return {
      ...(await eventsBench({
        config,
        stores,
        nc,
        token,
        log,
        rounds: ROUNDS,
        seconds: SECONDS,
        start: startChild,
        env,
        systemCpu,
      })),
    };
  } finally {
    await nc.drain();
  }
}

/** Notifications: a rack of hosts offline at once, and signed webhook throughput (bench/notifications.ts). */
async function notifications(token: string): Promise<Record<string, unknown>> {
  const nc = await connectNats(
    config.SVC_NATS_URL,
    'bench-notifications',
    log,
    config.SVC_NATS_CREDS,
    config.SVC_NATS_CA,
  );
  try {
    return { ...(await notificationsBench({ config, stores, nc, token, rounds: ROUNDS, start: startChild, env })) };
  } finally {
    await nc.drain();
  }
}

/** The packaged agent against `npm run agent`'s: size, and resident memory after a minute of work (bench/agent.ts). */
async function agent(): Promise<Record<string, unknown>> {
  const f = await agentBench({ stores, rounds: ROUNDS, start: startChild, env });
  console.log(
    `\n## agent: the packaged executable against \`node agent/main.ts\`, side by side, RSS after ${f.seconds} s`,
  );
  console.log(`executable ${f.executableMiB.toFixed(1)} MiB, .deb ${f.debMiB.toFixed(1)} MiB`);
  for (const cache of ['cold', 'fresh'] as const) {
    const c = f[cache];
    console.log(
      cache === 'cold'
        ? 'cold page cache (only what runs is cached, as after a reboot):'
        : 'freshly written executable (as right after dpkg -i), started as its unit starts it (ExecStartPre first):',
    );
    console.log(
      `  RSS MiB: packaged ${fmt(c.packagedRssMiB, 1)} (anonymous ${fmt(c.packagedAnonMiB, 1)}, file ${fmt(c.packagedFileMiB, 1)}), unbundled ${fmt(c.unbundledRssMiB, 1)}, floor ${fmt(c.floorRssMiB, 1)} (file ${fmt(c.floorFileMiB, 1)})`,
    );
    console.log(
      `  packaged / unbundled ${fmt(c.ratio, 2)} (target ≤ 1.20); packaged / floor ${fmt(c.toFloor, 2)}; packaged ${c.packagedRssMiB.max < 80 ? 'under' : 'NOT under'} 80 MiB`,
    );
  }
  return { ...f };
}

const runtime = async (): Promise<Record<string, unknown>> => ({
  ...(await runtimeBench({ config, log, rounds: ROUNDS, seconds: SECONDS })),
});
const PARTS = {
  hop,
  runtime,
  login,
  me,
  resolve,
  signing,
  invoice,
  fleet,
  search,
  metrics,
  servicedesk,
  events,
  notifications,
  agent,
  memory,
  web,
} as const;
type Part = keyof typeof PARTS;
const results: Record<string, unknown> = {};
let previous: Record<string, unknown> = {};
let benchToken = '';
let benchUser: Awaited<ReturnType<typeof seed>> | undefined;

const env = {
  SVC_SERVER_PORT: String(GATEWAY_PORT),
  SVC_GATEWAYS: 'console',
  SVC_ACTORS: 'identity,fleet',
  SVC_API_RATE_LIMIT: '1000000000',
  SVC_AUTH_RATE_LIMIT: '1000000000',
  BENCH_DIRECT_PORT: String(DIRECT_PORT),
};
/** Started on first use, shared by the parts that use it, and stopped (to start afresh if used again) by `stop`. */
interface Shared<T> {
  (): Promise<T>;
  stop: () => Promise<void>;
}
/** The processes of the shared systems: a part stops the others it started when it ends (`stopPartChildren`). */
const sharedProcesses = new Set<ChildProcess>();
const once = <T extends ChildProcess | ChildProcess[]>(f: () => Promise<T>): Shared<T> => {
  let p: Promise<T> | undefined;
  const get = (() =>
    (p ??= f().then((got) => {
      for (const c of Array.isArray(got) ? got : [got]) sharedProcesses.add(c);
      return got;
    }))) as Shared<T>;
  get.stop = async () => {
    const started = p;
    p = undefined;
    const got: ChildProcess | ChildProcess[] = started ? await started.catch(() => []) : [];
    const processes: ChildProcess[] = Array.isArray(got) ? got : [got];
    await Promise.all(
      processes.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        await exited;
      }),
    );
  };
  return get;
};
/**
 * Deletes the durable consumers of a namespace (`<durable><suffix>`). The split system runs only during the hop part,
 * so between runs its telemetry consumers piled up every message the other parts' agents sent, and drained that
 * backlog (dead-lettering it: those agents are gone) in the middle of the hop's measurement.
 */
async function dropDurables(suffix: string): Promise<void> {
  const nc = await connectNats(config.SVC_NATS_URL, 'bench-durables', log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
  try {
    const jsm = await jetstreamManager(nc);
    for await (const stream of jsm.streams.list()) {
      for await (const c of jsm.consumers.list(stream.config.name)) {
        // A consumer deleted while the list is read comes back as null.
        if (c?.name.endsWith(suffix)) await jsm.consumers.delete(stream.config.name, c.name);
      }
    }
  } finally {
    await nc.drain();
  }
}

/** `npm start`'s shape: both gateways' work and the actors on one event loop. */
const single = once(() => startChild(['main.ts'], env, `http://127.0.0.1:${GATEWAY_PORT}/readyz`));
/** Gateway and actors in separate processes, in a namespace of their own so the single process's actors never answer. */
const split = once(async (): Promise<ChildProcess[]> => {
  const ns = { SVC_NAMESPACE: `${namespace}-split` };
  await dropDurables(`-${ns.SVC_NAMESPACE}`);
  // The actor process has no HTTP port: it is up once the split gateway's list answers 200 through it.
  const url = `http://127.0.0.1:${SPLIT_GATEWAY_PORT}/api/v1/clients`;
  const started = await Promise.all([
    startChild(['main.ts'], { ...env, ...ns, SVC_GATEWAYS: 'none' }, ''),
    startChild(
      ['main.ts'],
      { ...env, ...ns, SVC_ACTORS: 'none', SVC_SERVER_PORT: String(SPLIT_GATEWAY_PORT) },
      `http://127.0.0.1:${SPLIT_GATEWAY_PORT}/readyz`,
    ),
  ]);
  for (
    let i = 0;
    i < 300 &&
    (await fetch(url, { headers: { authorization: `Bearer ${benchToken}` } }).catch(() => undefined))?.status !== 200;
    i++
  )
    await new Promise((r) => setTimeout(r, 100));
  return started;
});
const direct = once(() =>
  startChild(
    ['bench/direct-server.ts'],
    {
      ...env,
      // A namespace of its own: its actor host serves the fleet list in the fleet queue group, as the systems do.
      SVC_NAMESPACE: `${namespace}-direct`,
      BENCH_GATEWAY_NOHOP_PORT: String(GATEWAY_NOHOP_PORT),
      BENCH_GATEWAY_BAREHOP_PORT: String(GATEWAY_BAREHOP_PORT),
      BENCH_GATEWAY_RUNTIME_PORT: String(GATEWAY_RUNTIME_PORT),
    },
    `http://127.0.0.1:${GATEWAY_NOHOP_PORT}/api/v1/clients`,
  ),
);

/** The peer in one process: moleculer-web and the service on two brokers of one process, calling over NATS. */
const moleculer = once(() =>
  startChild(
    ['bench/moleculer-server.ts'],
    { ...env, BENCH_MOLECULER_PORT: String(MOLECULER_PORT), BENCH_MOLECULER_NAMESPACE: 'one' },
    `http://127.0.0.1:${MOLECULER_PORT}/api/v1/clients`,
  ),
);
/** The peer split: the gateway process calls the service process over the NATS transporter. */
const moleculerSplit = once(async (): Promise<ChildProcess[]> => {
  const ns = { BENCH_MOLECULER_NAMESPACE: 'split' };
  const service = await startChild(
    ['bench/moleculer-server.ts'],
    { ...env, ...ns, BENCH_MOLECULER_ROLE: 'service' },
    '',
  );
  const gateway = await startChild(
    ['bench/moleculer-server.ts'],
    { ...env, ...ns, BENCH_MOLECULER_ROLE: 'gateway', BENCH_MOLECULER_PORT: String(MOLECULER_SPLIT_PORT) },
    `http://127.0.0.1:${MOLECULER_SPLIT_PORT}/api/v1/clients`,
  );
  return [service, gateway];
});

/**
 * Writes `part`'s figures into data/bench/latest.json, dated: parts run now replace theirs, the others keep those of
 * their last run (each part carries its date).
 */
function saveFigures(part: string): void {
  mkdirSync('data/bench', { recursive: true });
  previous = {
    ...previous,
    [part]: { at: new Date().toISOString(), rounds: ROUNDS, seconds: SECONDS, ...(results[part] as object) },
  };
  writeFileSync('data/bench/latest.json', JSON.stringify(previous, null, 2));
}

/**
 * Stops what a part started (from `children[from]` on) other than the shared systems. Left running, a part's system
 * held its port (the agent part's start-up failed on the service desk's 18084) and its fleet actors consumed the later
 * parts' agent telemetry (agent subjects are not namespaced).
 */
async function stopPartChildren(from: number): Promise<void> {
  await Promise.all(
    children.slice(from).map(async (c) => {
      if (sharedProcesses.has(c) || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await exited;
    }),
  );
}

/**
 * Writes out what the parts before wrote, so that a part does not pay for their write-back: the search seed's 21
 * million rows were still being checkpointed (PostgreSQL spreads a checkpoint over minutes) and flushed by the kernel
 * during the metrics part that followed it in a whole run, which read its ingest ratio 0.47 there and 0.56 alone.
 */
async function flushWrites(): Promise<void> {
  const conn = (await stores.orm()).em.fork().getConnection();
  await checkpoint((sql) => conn.execute(sql));
  spawnSync('sync');
}

/** The parts that use the systems `single`, `split` and `direct` (the others start their own). */
const SHARED_USERS = new Set<string>(['hop', 'login', 'me', 'resolve', 'search', 'web']);

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a) => a !== '--');
  const unknown = asked.filter((a) => !(a in PARTS));
  if (unknown.length > 0)
    throw new Error(`unknown bench part(s) ${unknown.join(', ')}; parts: ${Object.keys(PARTS).join(', ')}`);
  const parts = (asked.length > 0 ? asked : Object.keys(PARTS)) as Part[];
  console.log(
    `bench: NATS namespace ${namespace} (request subjects ${namespace}.svc.…); parts ${parts.join(', ')}; ${ROUNDS} rounds of ${SECONDS}s`,
  );
  try {
    previous = JSON.parse(readFileSync('data/bench/latest.json', 'utf8')) as Record<string, unknown>;
  } catch {
    previous = {};
  }
  const user = await seed();
  benchToken = user.token;
  benchUser = user;
  for (const part of parts) {
    // The systems the hop part starts stay up for the parts that use them, and only for those. Their fleet actors
    // consume every agent's telemetry (agent subjects are not namespaced): the split one under durables of its own,
    // the single one sharing the bench's durables with the system a fleet or metrics part starts. Left running, they
    // ingested every heartbeat and sample a second time and took half of the measured process's work.
    if (!SHARED_USERS.has(part)) await Promise.all([split.stop(), direct.stop()]);
    if (part === 'fleet' || part === 'metrics') await single.stop();
    await flushWrites();
    const startedBefore = children.length;
    results[part] = await (part === 'hop'
      ? hop(user.token)
      : part === 'me'
        ? me(user.token)
        : part === 'invoice'
          ? invoice(user.token)
          : part === 'fleet'
            ? fleet(user.token)
            : part === 'metrics'
              ? metrics(user.token)
              : part === 'servicedesk'
                ? servicedesk(user.token)
                : part === 'events'
                  ? events(user.token)
                  : part === 'notifications'
                    ? notifications(user.token)
                    : part === 'resolve'
                      ? resolve(user.userId)
                      : part === 'search'
                        ? search(user.token)
                        : PARTS[part as 'login' | 'signing' | 'runtime' | 'agent' | 'memory' | 'web']());
    await stopPartChildren(startedBefore);
    // Written after every part, so a run stopped halfway keeps what it measured.
    saveFigures(part);
  }
  console.log('\nfigures written to data/bench/latest.json');
}

try {
  await main();
} finally {
  for (const c of children) c.kill('SIGTERM');
  await stores.close();
}
