import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { catalogue } from '../../contracts/catalogue.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { brokerEnv, NATS_CA, testConfig, testSigner } from '../support/env.ts';
import { freePort } from '../support/processes.ts';
import { startFlags } from '../../scripts/start-flags.ts';

/**
 * The real entry point, `node main.ts`, as `npm start` and the Dockerfile run it: start-up refuses bad
 * configuration and unreachable stores with a message naming the variable, and SIGTERM drains before exiting 0.
 */

const log = createLogger('silent');
const base = testConfig();

interface Child {
  proc: ChildProcess;
  stderr: () => string;
  stdout: () => string;
  exited: Promise<number | null>;
}

function runMain(env: Record<string, string | undefined>): Child {
  // The broker and the signing key of the test systems, so the child and this file's actors trust each other.
  const merged: NodeJS.ProcessEnv = { ...process.env, ...brokerEnv(), SVC_LOG_LEVEL: 'info', ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete merged[k];
  const proc = spawn(process.execPath, [...startFlags().flags, 'main.ts'], {
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { proc, stdout: () => out, stderr: () => err, exited };
}

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);

/** A GET over a real socket (not inject): what a client of the running process sees. */
function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('start-up refusals', () => {
  // Started together (each pays its start-up), awaited by the tests below.
  let missingDb: Child;
  let badActors: Child;
  let badGateways: Child;
  let closedDb: Child;
  let noSecret: Child;
  beforeAll(() => {
    noSecret = runMain({
      SVC_DB_URL: base.SVC_DB_URL,
      SVC_ACTORS: 'none',
      SVC_GATEWAYS: 'console',
      SVC_JWT_SECRET: undefined,
    });
    missingDb = runMain({ SVC_DB_URL: undefined });
    badActors = runMain({ SVC_DB_URL: base.SVC_DB_URL, SVC_ACTORS: 'billing' });
    badGateways = runMain({ SVC_DB_URL: base.SVC_DB_URL, SVC_ACTORS: 'none', SVC_GATEWAYS: 'admin' });
    closedDb = runMain({
      SVC_DB_URL: 'postgresql://postgres:secret-pw@127.0.0.1:1/test',
      SVC_ACTORS: 'fleet',
      SVC_GATEWAYS: 'none',
    });
  });
  afterAll(() => {
    for (const c of [missingDb, badActors, badGateways, closedDb, noSecret])
      if (c?.proc.exitCode === null) c.proc.kill('SIGKILL');
  });

  it('exits 2 naming SVC_DB_URL when it is missing', async () => {
    expect(await within(missingDb.exited, 20_000, 'exit')).toBe(2);
    expect(missingDb.stderr()).toMatch(/SVC_DB_URL: is required/);
  });

  it('exits 2 naming the secret a gateway process lacks', async () => {
    expect(await within(noSecret.exited, 20_000, 'exit')).toBe(2);
    expect(noSecret.stderr()).toMatch(/SVC_JWT_SECRET: is required/);
  });

  it('exits 2 naming SVC_ACTORS and SVC_GATEWAYS when they name nothing known', async () => {
    expect(await within(badActors.exited, 20_000, 'exit')).toBe(2);
    expect(await within(badGateways.exited, 20_000, 'exit')).toBe(2);
    expect(badActors.stderr()).toMatch(/SVC_ACTORS: unknown domain\(s\) billing/);
    expect(badGateways.stderr()).toMatch(/SVC_GATEWAYS: unknown gateway\(s\) admin/);
  });

  it('exits 1 at once with a message naming SVC_DB_URL when PostgreSQL is on a closed port (no hang, no stack to decode)', async () => {
    expect(await within(closedDb.exited, 20_000, 'exit')).toBe(1);
    expect(closedDb.stderr()).toMatch(
      /start-up failed: PostgreSQL is not reachable at postgresql:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test \(SVC_DB_URL\)/,
    );
    expect(closedDb.stderr() + closedDb.stdout()).not.toContain('secret-pw');
  });
});

describe('SIGTERM to the whole process', () => {
  let nc: NatsConnection;
  let slow: ActorHost<typeof catalogue>;
  let release: (() => void) | undefined;
  let entered: () => void = () => undefined;

  beforeAll(async () => {
    // The actor behind GET /api/v1/auth/config, served from this test: it holds the request until released, so the
    // request is surely in flight when the signal arrives.
    nc = await connectNats(base.SVC_NATS_URL, 'process-test', log, base.SVC_NATS_CREDS, NATS_CA);
    slow = new ActorHost(nc, catalogue, testSigner(), log);
    await slow.serve('identity', `identity-slow-${randomUUID().slice(0, 6)}`, {
      'svc.identity.sso.config': async () => {
        entered();
        await new Promise<void>((r) => (release = r));
        return { sso_enabled: false };
      },
    });
  });

  afterAll(async () => {
    release?.();
    await slow.drain(100);
    await nc.drain();
  });

  it('lets the in-flight HTTP request finish, refuses new connections, and exits 0', async () => {
    const port = await freePort();
    const child = runMain({
      SVC_DB_URL: base.SVC_DB_URL,
      SVC_JWT_SECRET: base.SVC_JWT_SECRET,
      SVC_ACTORS: 'none',
      SVC_GATEWAYS: 'console',
      SVC_SERVER_PORT: String(port),
      SVC_REQUEST_TIMEOUT_MS: '10000',
    });
    try {
      // Up when /healthz answers over the socket.
      const until = Date.now() + 30_000;
      for (;;) {
        if (child.proc.exitCode !== null) throw new Error(`main.ts exited early: ${child.stderr()}`);
        const ok = await get(port, '/healthz').then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) break;
        if (Date.now() > until) throw new Error('main.ts did not come up');
        await new Promise((r) => setTimeout(r, 100));
      }

      const inHandler = new Promise<void>((r) => (entered = r));
      const inflight = get(port, '/api/v1/auth/config');
      await within(inHandler, 5_000, 'request reaching the actor');
      child.proc.kill('SIGTERM');
      // The listener closes: a new connection is refused while the old request is still being answered.
      const until2 = Date.now() + 5_000;
      for (;;) {
        const refused = await get(port, '/healthz').then(
          () => false,
          () => true,
        );
        if (refused) break;
        if (Date.now() > until2) throw new Error('the gateway still accepts connections after SIGTERM');
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(child.proc.exitCode).toBeNull();
      release?.();
      const res = await within(inflight, 5_000, 'in-flight response');
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ data: { sso_enabled: false } });
      expect(await within(child.exited, 10_000, 'exit after drain')).toBe(0);
      // The start-up log names the runtime: the Node 24 the project pins (node_modules/.bin/node), not the system's.
      const started = child
        .stdout()
        .split('\n')
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as { msg?: string; node?: string }];
          } catch {
            return [];
          }
        })
        .find((l) => l.msg === 'system started');
      expect(started?.node).toBe(process.version);
      expect(process.version).toMatch(/^v24\./);
      expect(child.stdout()).toMatch(/"msg":"stopped"/);
    } finally {
      if (child.proc.exitCode === null) child.proc.kill('SIGKILL');
    }
  });
});
