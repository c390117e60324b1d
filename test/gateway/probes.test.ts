import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { LazyNats } from '../../platform/nats.ts';
import { catalogue } from '../../contracts/catalogue.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { buildConsoleGateway } from '../../gateway/console/app.ts';
import { buildInvoicingGateway } from '../../gateway/invoicing/app.ts';
import type { GatewayDeps } from '../../gateway/shared/bridge.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testConfig, testSigner } from '../support/env.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { waitFor, freePort, startNatsServer, stopProcess } from '../support/processes.ts';

const log = createLogger('silent');
const CLOSED_PORT = 'postgresql://postgres@127.0.0.1:1/test';

function depsFor(nats: LazyNats): GatewayDeps {
  return {
    caller: new Caller(() => nats.current, catalogue, testSigner()),
    requestTimeoutMs: 1000,
    auth: {
      authenticate: async () => {
        throw new DomainError('unauthorized', 'no');
      },
    },
  };
}

describe('probes of the running system', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem();
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('console: /healthz and /readyz answer ok', async () => {
    expect((await sys.http({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
    const ready = await sys.http({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });

  it('invoicing: /healthz carries version and uptime; /readyz checks both stores', async () => {
    const health = await sys.invoicingHttp({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ status: 'ok', version: expect.any(String) });
    expect(Number.isInteger(health.json().uptime_seconds)).toBe(true);
    const ready = await sys.invoicingHttp({ method: 'GET', url: '/readyz' });
    expect(ready.json()).toEqual({ status: 'ready', checks: { relational_store: 'ok', analytics_store: 'ok' } });
    expect(ready.statusCode).toBe(200);
  });
});

describe('probes when a dependency is down', () => {
  it('console /readyz is 503 when PostgreSQL is on a closed port', async () => {
    const nats = new LazyNats(NATS_URL, 'probe-test', log, NATS_CREDS, NATS_CA);
    await nats.ready;
    const gw = await buildConsoleGateway({
      config: testConfig({ SVC_DB_URL: CLOSED_PORT }),
      log,
      nats,
      deps: depsFor(nats),
      version: 't',
    });
    try {
      const res = await gw.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({ status: 'not_ready' });
      expect((await gw.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await gw.app.close();
      await gw.close();
      await nats.close();
    }
  });

  it('console /readyz is 503 when NATS is on a closed port, and answers quickly', async () => {
    const nats = new LazyNats('nats://127.0.0.1:1', 'probe-test-closed', log);
    const gw = await buildConsoleGateway({ config: testConfig(), log, nats, deps: depsFor(nats), version: 't' });
    try {
      const t0 = Date.now();
      const res = await gw.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(Date.now() - t0).toBeLessThan(2500);
    } finally {
      await gw.app.close();
      await gw.close();
      await nats.close();
    }
  });

  it('invoicing /readyz is 503 naming the analytics store when only NATS is down', async () => {
    const nats = new LazyNats('nats://127.0.0.1:1', 'probe-test-closed-3', log);
    const gw = await buildInvoicingGateway({ config: testConfig(), log, deps: depsFor(nats), version: 't' });
    try {
      const res = await gw.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        status: 'not_ready',
        checks: { relational_store: 'ok', analytics_store: expect.stringMatching(/^unreachable: /) },
      });
    } finally {
      await gw.app.close();
      await gw.close();
      await nats.close();
    }
  });

  it('invoicing /readyz names the failing store', async () => {
    const nats = new LazyNats('nats://127.0.0.1:1', 'probe-test-closed-2', log);
    const gw = await buildInvoicingGateway({
      config: testConfig({ SVC_DB_URL: CLOSED_PORT }),
      log,
      deps: depsFor(nats),
      version: 't',
    });
    try {
      const res = await gw.app.inject({ method: 'GET', url: '/readyz' });
      expect(res.statusCode).toBe(503);
      const body = res.json();
      expect(body.status).toBe('not_ready');
      expect(body.checks.relational_store).toMatch(/unreachable/);
      expect(body.checks.analytics_store).toMatch(/unreachable/);
      const health = await gw.app.inject({ method: 'GET', url: '/healthz' });
      expect(health.statusCode).toBe(200);
    } finally {
      await gw.app.close();
      await gw.close();
      await nats.close();
    }
  });
});

describe('probes across a NATS outage (private server)', () => {
  let port: number;
  let storeDir: string;
  let server: ChildProcess | undefined;
  beforeAll(async () => {
    port = await freePort();
    storeDir = await mkdtemp(join(tmpdir(), 'probe-nats-'));
  });
  afterAll(async () => {
    await stopProcess(server);
    await rm(storeDir, { recursive: true, force: true });
  });

  const readyz = async (app: {
    inject: (o: { method: 'GET'; url: string }) => Promise<{ statusCode: number }>;
  }): Promise<number> => (await app.inject({ method: 'GET', url: '/readyz' })).statusCode;

  it('console /readyz follows NATS: 503 before it starts, 200 once up, 503 while it restarts, 200 again', async () => {
    // The gateway starts before the broker: it must serve probes (503) and connect when NATS appears.
    const nats = new LazyNats(`nats://127.0.0.1:${port}`, 'probe-outage', log, NATS_CREDS, NATS_CA);
    const gw = await buildConsoleGateway({ config: testConfig(), log, nats, deps: depsFor(nats), version: 't' });
    const caller = new Caller(() => nats.current, catalogue, testSigner());
    try {
      expect(await readyz(gw.app)).toBe(503);
      server = startNatsServer(port, storeDir);
      await waitFor(async () => (await readyz(gw.app)) === 200, 15_000, 'ready after NATS started', 100);

      await stopProcess(server);
      await waitFor(async () => (await readyz(gw.app)) === 503, 10_000, 'not ready while NATS is down', 100);
      // While the broker is away a call fails at once with unavailable (503), not after its whole deadline (504).
      const t0 = Date.now();
      await expect(
        caller.call('svc.identity.sso.config', {}, anonymousContext('outage'), { timeoutMs: 5000 }),
      ).rejects.toMatchObject({ code: 'unavailable' });
      expect(Date.now() - t0).toBeLessThan(500);

      server = startNatsServer(port, storeDir);
      await waitFor(async () => (await readyz(gw.app)) === 200, 15_000, 'ready again after NATS restarted', 100);
    } finally {
      await gw.app.close();
      await gw.close();
      await nats.close();
    }
  });
});
