import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Caller } from '../../actors/runtime/call.ts';
import { createLogger } from '../../actors/runtime/logger.ts';
import { LazyNats } from '../../actors/runtime/nats.ts';
import { catalogue } from '../../contracts/catalogue.ts';
import { DomainError } from '../../contracts/errors.ts';
import { buildConsoleGateway } from '../../gateway/console/app.ts';
import { buildInvoicingGateway } from '../../gateway/invoicing/app.ts';
import type { GatewayDeps } from '../../gateway/shared/bridge.ts';
import { testConfig } from '../support/env.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

const log = createLogger('silent');
const CLOSED_PORT = 'postgresql://postgres@127.0.0.1:1/test';

function depsFor(nats: LazyNats): GatewayDeps {
  return {
    caller: new Caller(() => nats.current, catalogue),
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
    await sys.stop();
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
    const nats = new LazyNats('nats://127.0.0.1:4222', 'probe-test', log);
    await nats.ready;
    const gw = await buildConsoleGateway({ config: testConfig({ SVC_DB_URL: CLOSED_PORT }), log, nats, deps: depsFor(nats), version: 't' });
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

  it('invoicing /readyz names the failing store', async () => {
    const nats = new LazyNats('nats://127.0.0.1:1', 'probe-test-closed-2', log);
    const gw = await buildInvoicingGateway({ config: testConfig({ SVC_DB_URL: CLOSED_PORT }), log, deps: depsFor(nats), version: 't' });
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
