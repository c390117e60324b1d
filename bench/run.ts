// `npm run bench`: measures side by side in one run and prints ratios. Not a test: nothing here fails a build.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import argon2 from 'argon2';
import { generateSecret } from 'otplib';
import { AccessTokens, SecretBox } from '../actors/identity/crypto.ts';
import { loadConfig } from '../actors/runtime/config.ts';
import { createLogger } from '../actors/runtime/logger.ts';
import { connectNats } from '../actors/runtime/nats.ts';
import { Caller } from '../actors/runtime/call.ts';
import { contextSigner } from '../actors/runtime/signing.ts';
import { Stores } from '../actors/runtime/stores/index.ts';
import { catalogue } from '../contracts/catalogue.ts';
import { anonymousContext } from '../contracts/context.ts';
import { load, mean, table, type LoadResult } from './load.ts';
import { useBenchNamespace } from './namespace.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const GATEWAY_PORT = 18080;
const DIRECT_PORT = 18090;

// Before the config is read and any child starts: they all inherit the bench's namespace.
const namespace = useBenchNamespace();
const config = loadConfig();
const log = createLogger('warn');
const stores = new Stores(config, log);
const children: ChildProcess[] = [];

/** Starts `node --import tsx <args>` and resolves once `readyUrl` answers. */
async function startChild(args: string[], env: Record<string, string>, readyUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { env: { ...process.env, SVC_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  children.push(child);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
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

/** A super admin with MFA enrolled, 60 clients to list, and a token for it. */
async function seed(): Promise<{ token: string; userId: string; email: string; password: string }> {
  const orm = await stores.orm();
  const conn = orm.em.fork().getConnection();
  const userId = randomUUID();
  const email = `bench-${userId.slice(0, 8)}@example.com`;
  const password = 'bench password 0123456789';
  const box = new SecretBox(config.SVC_MFA_ENCRYPTION_KEY!);
  await conn.execute(`INSERT INTO users (id, email, display_name, status, is_super_admin, password_hash, mfa_enabled, mfa_secret_enc) VALUES (?, ?, 'Bench', 'active', true, ?, true, ?)`, [
    userId,
    email,
    await argon2.hash(password, { type: argon2.argon2id }),
    box.seal(generateSecret()),
  ]);
  const existing = await conn.execute<{ n: string }[]>(`SELECT count(*)::text AS n FROM clients WHERE slug LIKE 'bench-%'`);
  for (let i = Number(existing[0]?.n ?? 0); i < 60; i++) await conn.execute(`INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [randomUUID(), `Bench ${i}`, `bench-${i}`]);
  const sessionId = randomUUID();
  await conn.execute(`INSERT INTO sessions (id, user_id, last_active_at, expires_at) VALUES (?, ?, now(), now() + interval '1 day')`, [sessionId, userId]);
  const token = await new AccessTokens(config.SVC_JWT_SECRET!, 3600).sign({ sub: userId, sid: sessionId, email });
  return { token, userId, email, password };
}

async function foundation(token: string): Promise<Record<string, unknown>> {
  const headers = { authorization: `Bearer ${token}` };
  const actorUrl = `http://127.0.0.1:${GATEWAY_PORT}/api/v1/clients`;
  const directUrl = `http://127.0.0.1:${DIRECT_PORT}/api/v1/clients`;
  // Warm both paths (JIT, pools, caches).
  await load('warm', actorUrl, { headers, seconds: 2, connections: CONNECTIONS });
  await load('warm', directUrl, { headers, seconds: 2, connections: CONNECTIONS });
  const actor: LoadResult[] = [];
  const direct: LoadResult[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    actor.push(await load('gateway → NATS → actor → PG', actorUrl, { headers, seconds: SECONDS, connections: CONNECTIONS }));
    direct.push(await load('bare Fastify → PG', directUrl, { headers, seconds: SECONDS, connections: CONNECTIONS }));
  }
  const a = mean(actor);
  const d = mean(direct);
  const throughputRatio = a.rps / d.rps;
  const p99Ratio = a.p99 / d.p99;
  console.log(`\n## Foundation: authenticated GET /api/v1/clients, ${CONNECTIONS} connections, ${ROUNDS}×${SECONDS}s interleaved`);
  console.log(table([a, d]));
  console.log(`throughput ratio actor/direct: ${throughputRatio.toFixed(2)} (target ≥ 0.80)   p99 ratio: ${p99Ratio.toFixed(2)} (target ≤ 1.50)`);
  return { actor: a, direct: d, throughputRatio, p99Ratio };
}

async function identity(user: { userId: string; email: string; password: string; token: string }): Promise<Record<string, unknown>> {
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
    await conn.execute(`INSERT INTO users (id, email, display_name, status, password_hash) VALUES (?, ?, 'Login', 'active', ?)`, [randomUUID(), email, hash]);
  }

  // Raw argon2id verifications per second at the same parallelism the service allows (4 at once).
  const rawEnd = Date.now() + SECONDS * 1000;
  let rawCount = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (Date.now() < rawEnd) {
        await argon2.verify(hash, password);
        rawCount++;
      }
    }),
  );
  const rawPerSec = rawCount / SECONDS;
  const login = await load('POST /auth/login', `http://127.0.0.1:${GATEWAY_PORT}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    bodies: loginEmails.map((email) => JSON.stringify({ email, password })),
    seconds: SECONDS,
    connections: 8,
  });
  const loginRatio = login.rps / rawPerSec;

  const me = await load('GET /auth/me (warm cache)', `http://127.0.0.1:${GATEWAY_PORT}/api/v1/auth/me`, {
    headers: { authorization: `Bearer ${user.token}` },
    seconds: SECONDS,
    connections: CONNECTIONS,
  });

  // Permission resolution straight on its subject: cold (cache entry dropped before each call) and warm.
  const nc = await connectNats(config.SVC_NATS_URL, 'bench', log, config.SVC_NATS_CREDS);
  const caller = new Caller(() => nc, catalogue, contextSigner(config));
  const kv = await stores.kv();
  const times = async (n: number, before?: () => Promise<unknown>): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      if (before) await before();
      const t0 = performance.now();
      await caller.call('svc.identity.access.resolve', { user_id: user.userId }, anonymousContext(randomUUID()));
      out.push(performance.now() - t0);
    }
    return out.sort((x, y) => x - y);
  };
  const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
  const cold = await times(1000, () => kv.del(`access:user:${user.userId}`));
  const warm = await times(3000);
  await nc.drain();

  console.log(`\n## Identity`);
  console.log(table([login, me]));
  console.log(`raw argon2id verifications/s (4 parallel): ${rawPerSec.toFixed(1)}   login/raw: ${loginRatio.toFixed(2)} (target ≥ 0.90)`);
  console.log(`permission resolution p50/p99 ms: cold ${pct(cold, 50).toFixed(2)}/${pct(cold, 99).toFixed(2)}   warm ${pct(warm, 50).toFixed(2)}/${pct(warm, 99).toFixed(2)}`);
  return { login, rawPerSec, loginRatio, me, resolve: { cold: { p50: pct(cold, 50), p99: pct(cold, 99) }, warm: { p50: pct(warm, 50), p99: pct(warm, 99) } } };
}

async function main(): Promise<void> {
  console.log(`bench: NATS namespace ${namespace} (request subjects ${namespace}.svc.…)`);
  const user = await seed();
  const env = {
    SVC_SERVER_PORT: String(GATEWAY_PORT),
    SVC_GATEWAYS: 'console',
    SVC_ACTORS: 'identity,fleet',
    SVC_API_RATE_LIMIT: '1000000000',
    SVC_AUTH_RATE_LIMIT: '1000000000',
    BENCH_DIRECT_PORT: String(DIRECT_PORT),
  };
  await startChild(['main.ts'], env, `http://127.0.0.1:${GATEWAY_PORT}/readyz`);
  await startChild(['bench/direct-server.ts'], env, `http://127.0.0.1:${DIRECT_PORT}/api/v1/clients`);
  const results = { at: new Date().toISOString(), foundation: await foundation(user.token), identity: await identity(user) };
  mkdirSync('data/bench', { recursive: true });
  writeFileSync('data/bench/latest.json', JSON.stringify(results, null, 2));
  console.log('\nfigures written to data/bench/latest.json');
}

try {
  await main();
} finally {
  for (const c of children) c.kill('SIGTERM');
  await stores.close();
}
