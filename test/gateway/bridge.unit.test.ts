import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { namespace, setNamespace } from '../../platform/namespace.ts';
import { ContextSigner } from '../../platform/signing.ts';
import { parseTraceparent } from '../../platform/trace.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { bridge, PageQuery, type GatewayDeps } from '../../gateway/shared/bridge.ts';
import { TEST_CONTEXT_KEY, testSigner } from '../support/env.ts';
import { FakeBroker } from '../support/fake-broker.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';

/**
 * Routes bridged to subjects (gateway/shared/bridge.ts), through Fastify's inject, with the broker and the actors
 * replaced by a FakeBroker under the real Caller: validation, the envelopes, the status of each error, what the actor
 * receives, and the bytes it answers passed on. The same over a real NATS server and ActorHost: plumbing.test.ts.
 */

const broker = new FakeBroker(new ContextSigner(TEST_CONTEXT_KEY), {
  'svc.rtest.echo': ({ name }: { name: string }) => ({ greeting: `hi ${name}`, instance: 'fake' }),
  'svc.rtest.sleep': () => 'silence',
  'svc.rtest.fail': ({ code }: { code: string }) => {
    throw new DomainError(
      code as 'conflict',
      code === 'internal_error' ? 'pool exhausted at db-7.internal:5432' : 'state does not allow it',
    );
  },
  'svc.rtest.scope': (_input: unknown, r) => ({
    traceparent: r.traceparent,
    deadline: r.deadline,
    request_id: r.requestId,
  }),
  'svc.rtest.page': ({ page, per_page }: { page: number; per_page: number }) => ({
    items: Array.from({ length: per_page }, (_, i) => ({ n: (page - 1) * per_page + i })),
    total: 1000,
    page,
    per_page,
  }),
});
let connected = true;

async function buildApp(style: 'console' | 'invoicing', timeoutMs = 1000): Promise<GatewayApp> {
  const deps: GatewayDeps<TestCat> = {
    caller: new Caller(() => (connected ? broker.connection : undefined), testCatalogue, testSigner()),
    requestTimeoutMs: timeoutMs,
    auth: {
      authenticate: async (req) => {
        if (req.headers.authorization !== 'Bearer good')
          throw new DomainError('unauthorized', 'missing or invalid credentials');
        return { request_id: req.id, principal: { kind: 'anonymous' } };
      },
    },
  };
  return createGatewayApp(
    {
      style,
      title: 't',
      version: '1',
      config: { SVC_CORS_ORIGINS: ['https://app.example.com'], SVC_ENABLE_DEBUG_ENDPOINTS: false },
      log: createLogger('silent'),
    },
    (app) => {
      bridge(app, deps, {
        method: 'POST',
        url: '/api/v1/echo',
        subject: 'svc.rtest.echo',
        auth: 'public',
        body: z.object({ name: z.string().min(1, 'must not be empty'), times: z.number().int() }),
        input: ({ body }) => body,
      });
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/sleep/:ms',
        subject: 'svc.rtest.sleep',
        auth: 'authenticated',
        params: z.object({ ms: z.coerce.number().int() }),
        input: ({ params }) => params,
      });
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/numbers',
        subject: 'svc.rtest.page',
        auth: 'public',
        query: PageQuery,
        input: ({ query }) => query,
        paged: true,
      });
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/unserved',
        subject: 'svc.rtest.unserved',
        auth: 'public',
        input: () => ({}),
      });
      for (const [url, code] of [
        ['/api/v1/conflict', 'conflict'],
        ['/api/v1/internal', 'internal_error'],
      ] as const)
        bridge(app, deps, { method: 'GET', url, subject: 'svc.rtest.fail', auth: 'public', input: () => ({ code }) });
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/scope',
        subject: 'svc.rtest.scope',
        auth: 'public',
        input: () => ({}),
      });
    },
  );
}

let consoleApp: GatewayApp;
let invoicingApp: GatewayApp;
beforeAll(async () => {
  consoleApp = await buildApp('console');
  invoicingApp = await buildApp('invoicing');
});
afterAll(async () => {
  await consoleApp?.close();
  await invoicingApp?.close();
});
afterEach(() => {
  broker.seen.length = 0;
  connected = true;
});

describe('a bridged route', () => {
  it('calls its subject with the validated input, signed, and forwards the answer’s bytes in data', async () => {
    const name = 'Grüße "zitat" \\ \u2028 😀 \t';
    const res = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload: { name, times: 2, extra: 'dropped' },
      headers: { 'x-request-id': 'req-1' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe(JSON.stringify({ data: { greeting: `hi ${name}`, instance: 'fake' } }));
    expect(broker.seen).toHaveLength(1);
    expect(broker.seen[0]).toMatchObject({
      subject: 'svc.rtest.echo',
      input: { name, times: 2 },
      requestId: 'req-1',
      ctx: { request_id: 'req-1', principal: { kind: 'anonymous' } },
      verified: true,
    });
    // The deadline the actor gets is the gateway's request timeout from now.
    expect(broker.seen[0]!.deadline - Date.now()).toBeGreaterThan(0);
    expect(broker.seen[0]!.deadline - Date.now()).toBeLessThanOrEqual(1000);
  });

  it('calls the namespaced subject when the process runs in a namespace', async () => {
    const before = namespace();
    setNamespace('t1unit');
    try {
      const res = await consoleApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name: 'a', times: 1 } });
      expect(res.statusCode, res.body).toBe(200);
      expect(broker.seen.map((r) => [r.subject, r.verified])).toEqual([['t1unit.svc.rtest.echo', true]]);
    } finally {
      setNamespace(before);
    }
  });

  it('answers a validation failure with a 400 envelope naming the fields, and calls nothing', async () => {
    const res = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload: { name: '', times: 'x' },
      headers: { 'x-request-id': 'req-123' },
    });
    expect(res.statusCode).toBe(400);
    const { error } = res.json() as { error: { code: string; message: string; request_id: string } };
    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/body\.name: must not be empty/);
    expect(error.message).toMatch(/body\.times/);
    expect(error.request_id).toBe('req-123');
    const malformed = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.statusCode).toBe(400);
    expect(broker.seen).toEqual([]);
  });

  it('authenticates before calling: 401 without credentials, the call with them', async () => {
    const refused = await consoleApp.inject({ method: 'GET', url: '/api/v1/sleep/5' });
    expect(refused.statusCode).toBe(401);
    expect(refused.json().error.code).toBe('unauthorized');
    expect(broker.seen).toEqual([]);
  });

  it('answers a paged subject with the list envelope cut from the actor’s bytes, and validates paging', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/numbers?page=3&per_page=2' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('{"data":[{"n":4},{"n":5}],"meta":{"total":1000,"page":3,"per_page":2}}');
    expect(broker.seen[0]!.input).toEqual({ page: 3, per_page: 2 });
    expect((await consoleApp.inject({ method: 'GET', url: '/api/v1/numbers' })).json().meta).toEqual({
      total: 1000,
      page: 1,
      per_page: 20,
    });
    const tooMany = await consoleApp.inject({ method: 'GET', url: '/api/v1/numbers?per_page=101' });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error.message).toMatch(/querystring\.per_page/);
  });

  it('continues the client’s trace with a span of its own, or starts one', async () => {
    const res = await consoleApp.inject({
      method: 'GET',
      url: '/api/v1/scope',
      headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    });
    const seen = parseTraceparent((res.json() as { data: { traceparent: string } }).data.traceparent);
    expect(seen?.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(seen?.spanId).not.toBe('00f067aa0ba902b7');
    const fresh = await consoleApp.inject({ method: 'GET', url: '/api/v1/scope', headers: { traceparent: 'nope' } });
    expect(parseTraceparent(fresh.json().data.traceparent)?.traceId).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('the errors of a call', () => {
  it('answer the actor’s refusal with its status, and an internal error without its message', async () => {
    const conflict = await consoleApp.inject({ method: 'GET', url: '/api/v1/conflict' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error).toMatchObject({ code: 'conflict', message: 'state does not allow it' });
    const internal = await consoleApp.inject({ method: 'GET', url: '/api/v1/internal' });
    expect(internal.statusCode).toBe(500);
    expect(internal.json().error).toEqual({
      code: 'internal_error',
      message: 'internal error',
      request_id: internal.headers['x-request-id'],
    });
  });

  it('use upper-case codes on the invoicing gateway', async () => {
    const bad = await invoicingApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name: '', times: 1 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('VALIDATION_ERROR');
    const conflict = await invoicingApp.inject({ method: 'GET', url: '/api/v1/conflict' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error).toMatchObject({ code: 'CONFLICT', message: 'state does not allow it' });
  });

  it('answer 503 when no actor serves the subject, and when there is no broker connection', async () => {
    const unserved = await consoleApp.inject({ method: 'GET', url: '/api/v1/unserved' });
    expect(unserved.statusCode).toBe(503);
    expect(unserved.json().error.code).toBe('service_unavailable');
    connected = false;
    const offline = await consoleApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name: 'a', times: 1 } });
    expect(offline.statusCode).toBe(503);
    expect(offline.json().error.code).toBe('service_unavailable');
  });

  it('answer 504 at the deadline when the actor does not answer', async () => {
    const app = await buildApp('console', 200);
    try {
      const t0 = Date.now();
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/sleep/5',
        headers: { authorization: 'Bearer good' },
      });
      expect(res.statusCode).toBe(504);
      expect(res.json().error.code).toBe('gateway_timeout');
      expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
      expect(Date.now() - t0).toBeLessThan(5_000);
    } finally {
      await app.close();
    }
  });

  it('answer an unknown route with the 404 envelope', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
    expect(broker.seen).toEqual([]);
  });
});
