import type { NatsConnection } from '@nats-io/transport-node';
import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { parseTraceparent } from '../../platform/trace.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { bridge, PageQuery, type GatewayDeps } from '../../gateway/shared/bridge.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testSigner } from '../support/env.ts';

const log = createLogger('silent');
let nc: NatsConnection;
let host: ActorHost<TestCat>;

async function buildApp(
  style: 'console' | 'invoicing',
  debug = false,
  timeoutMs = 1000,
  guard?: GatewayDeps['guard'],
): Promise<GatewayApp> {
  const deps: GatewayDeps<TestCat> = {
    caller: new Caller(() => nc, testCatalogue, testSigner()),
    requestTimeoutMs: timeoutMs,
    ...(guard ? { guard } : {}),
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
      config: { SVC_CORS_ORIGINS: ['https://app.example.com'], SVC_ENABLE_DEBUG_ENDPOINTS: debug },
      log,
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
      // No gateway-side schema: proves the actor's own validation reaches the client as a 400.
      bridge(app, deps, {
        method: 'POST',
        url: '/api/v1/raw-echo',
        subject: 'svc.rtest.echo',
        auth: 'public',
        input: ({ req }) => req.body as { name: string; times: number },
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
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/conflict',
        subject: 'svc.rtest.fail',
        auth: 'public',
        input: () => ({ code: 'conflict' as const }),
      });
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/internal',
        subject: 'svc.rtest.fail',
        auth: 'public',
        input: () => ({ code: 'internal_error' as const }),
      });
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
  nc = await connectNats(NATS_URL, 'gw-test', log, NATS_CREDS, NATS_CA);
  host = new ActorHost(nc, testCatalogue, testSigner(), log);
  await host.serve('rtest', 'rtest-gw', {
    'svc.rtest.echo': async ({ name }) => ({ greeting: `hi ${name}`, instance: 'gw' }),
    'svc.rtest.sleep': async ({ ms }) => {
      await new Promise((r) => setTimeout(r, ms));
      return { slept: ms };
    },
    'svc.rtest.fail': async ({ code }) => {
      throw new DomainError(
        code,
        code === 'internal_error' ? 'pool exhausted at db-7.internal:5432' : 'state does not allow it',
      );
    },
    'svc.rtest.scope': async (_input, scope) => ({
      traceparent: scope.traceparent,
      deadline: scope.deadline,
      request_id: scope.ctx.request_id,
    }),
    'svc.rtest.page': async ({ page, per_page }) => ({
      items: Array.from({ length: per_page }, (_, i) => ({ n: (page - 1) * per_page + i })),
      total: 1000,
      page,
      per_page,
    }),
  });
  consoleApp = await buildApp('console');
  invoicingApp = await buildApp('invoicing');
});

afterAll(async () => {
  await consoleApp.close();
  await invoicingApp.close();
  await host.drain(100);
  await nc.drain();
});

describe('gateway plumbing', () => {
  it('turns a valid request into a call and wraps the reply in data', async () => {
    const res = await consoleApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name: 'a', times: 1 } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { greeting: 'hi a', instance: 'gw' } });
  });

  it("forwards the actor's answer as its bytes: non-ASCII, quotes and line separators come out exactly", async () => {
    const name = 'Grüße "zitat" \\ \u2028 😀 \t';
    const res = await consoleApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name, times: 1 } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe(JSON.stringify({ data: { greeting: `hi ${name}`, instance: 'gw' } }));
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
  });

  it('answers a zod failure with a 400 envelope naming the field', async () => {
    const res = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload: { name: '', times: 'x' },
      headers: { 'x-request-id': 'req-123' },
    });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.error.code).toBe('bad_request');
    expect(body.error.message).toMatch(/body\.name: must not be empty/);
    expect(body.error.message).toMatch(/body\.times/);
    expect(body.error.request_id).toBe('req-123');
  });

  it('passes the actor validation failure through as 400', async () => {
    const res = await consoleApp.inject({ method: 'POST', url: '/api/v1/raw-echo', payload: { name: 'x', times: 7 } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(/times/);
  });

  it('answers a paged subject with the list envelope and validates paging', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/numbers?page=3&per_page=2' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: [{ n: 4 }, { n: 5 }], meta: { total: 1000, page: 3, per_page: 2 } });
    // Cut from the actor's bytes (Caller.callForwardedPage): the same body, byte for byte, as JSON.
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe('{"data":[{"n":4},{"n":5}],"meta":{"total":1000,"page":3,"per_page":2}}');
    expect((await consoleApp.inject({ method: 'GET', url: '/api/v1/numbers' })).json().meta).toEqual({
      total: 1000,
      page: 1,
      per_page: 20,
    });
    const tooMany = await consoleApp.inject({ method: 'GET', url: '/api/v1/numbers?per_page=101' });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().error.message).toMatch(/querystring\.per_page/);
  });

  it('uses upper-case codes on the invoicing gateway', async () => {
    const bad = await invoicingApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name: '', times: 1 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('VALIDATION_ERROR');
    const conflict = await invoicingApp.inject({ method: 'GET', url: '/api/v1/conflict' });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error).toMatchObject({ code: 'CONFLICT', message: 'state does not allow it' });
  });

  it('answers malformed JSON with 400', async () => {
    const res = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload: '{"name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('bad_request');
  });

  it('refuses bodies above 1 MB with 413 request_too_large', async () => {
    const payload = JSON.stringify({ name: 'x'.repeat(1024 * 1024), times: 1 });
    const res = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe('request_too_large');
    const ok = await consoleApp.inject({
      method: 'POST',
      url: '/api/v1/echo',
      payload: { name: 'x'.repeat(1000 * 1000), times: 1 },
    });
    expect(ok.statusCode).toBe(200);
  });

  it('echoes a given request id and generates one otherwise', async () => {
    const given = await consoleApp.inject({
      method: 'GET',
      url: '/api/v1/conflict',
      headers: { 'x-request-id': 'abc-42' },
    });
    expect(given.headers['x-request-id']).toBe('abc-42');
    expect(given.json().error.request_id).toBe('abc-42');
    const generated = await consoleApp.inject({ method: 'GET', url: '/api/v1/conflict' });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(generated.json().error.request_id).toBe(generated.headers['x-request-id']);
    const hostile = await consoleApp.inject({
      method: 'GET',
      url: '/api/v1/conflict',
      headers: { 'x-request-id': 'a b\u0000<script>' },
    });
    expect(hostile.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 503 when no actor serves the subject', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/unserved' });
    expect(res.statusCode).toBe(503);
    expect(res.json().error.code).toBe('service_unavailable');
  });

  it('answers 504 within the deadline when the actor is too slow', async () => {
    const t0 = Date.now();
    const res = await consoleApp.inject({
      method: 'GET',
      url: '/api/v1/sleep/2500',
      headers: { authorization: 'Bearer good' },
    });
    expect(res.statusCode).toBe(504);
    expect(res.json().error.code).toBe('gateway_timeout');
    expect(Date.now() - t0).toBeLessThan(1800);
  });

  it('counts the rate limiter and authentication against the same deadline as the call', async () => {
    // A limiter that takes 600 ms of a 1,000 ms budget leaves 400 ms for an actor that needs 800 ms: 504 at the
    // deadline, not a 200 after 1,400 ms nor a 504 after 1,600 (margins wide enough for a loaded machine).
    const slowGuard = async (): Promise<void> => {
      await new Promise((r) => setTimeout(r, 600));
    };
    const app = await buildApp('console', false, 1000, slowGuard);
    try {
      const t0 = Date.now();
      const res = await app.inject({
        method: 'GET',
        url: '/api/v1/sleep/800',
        headers: { authorization: 'Bearer good' },
      });
      expect(res.statusCode).toBe(504);
      expect(res.json().error.code).toBe('gateway_timeout');
      expect(Date.now() - t0).toBeLessThan(1300);
    } finally {
      await app.close();
    }
  });

  it('never shows an internal error message to the client', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/internal' });
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toEqual({
      code: 'internal_error',
      message: 'internal error',
      request_id: res.headers['x-request-id'],
    });
  });

  it('continues the client trace, or starts one, and carries the request id to the actor', async () => {
    const given = await consoleApp.inject({
      method: 'GET',
      url: '/api/v1/scope',
      headers: {
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        'x-request-id': 'trace-req-1',
      },
    });
    const seen = parseTraceparent(given.json().data.traceparent);
    expect(seen?.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(seen?.spanId).not.toBe('00f067aa0ba902b7');
    expect(given.json().data.request_id).toBe('trace-req-1');
    for (const headers of [{}, { traceparent: 'not a trace' }]) {
      const fresh = await consoleApp.inject({ method: 'GET', url: '/api/v1/scope', headers });
      expect(parseTraceparent(fresh.json().data.traceparent)?.traceId).toMatch(/^[0-9a-f]{32}$/);
    }
  });

  it('finishes in-flight requests on close and answers new ones with the 503 envelope', async () => {
    const app = await buildApp('console', false, 2000);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    // One kept-alive connection: a slow request is in flight when close begins, a second one arrives on it after.
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const ended = once(socket, 'close');
    const req = (path: string, id: string): string =>
      `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\nX-Request-Id: ${id}\r\n\r\n`;
    socket.write(req('/api/v1/sleep/300', 'first'));
    await new Promise((r) => setTimeout(r, 80));
    const closed = app.close();
    await new Promise((r) => setTimeout(r, 20));
    socket.write(req('/api/v1/sleep/1', 'late'));
    await closed;
    await ended;
    const responses = received.split(/(?=HTTP\/1\.1 )/);
    expect(responses.map((r) => r.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 503']);
    expect(responses[0]).toContain('{"data":{"slept":300}}');
    const body = JSON.parse(responses[1]!.slice(responses[1]!.indexOf('\r\n\r\n') + 4)) as unknown;
    expect(body).toEqual({
      error: { code: 'service_unavailable', message: expect.stringMatching(/shutting down/), request_id: 'late' },
    });
  });

  it('authenticates before calling', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/sleep/1' });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('unauthorized');
  });

  it('answers unknown routes with a 404 envelope', async () => {
    const res = await consoleApp.inject({ method: 'GET', url: '/api/v1/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('not_found');
  });

  it('allows only the configured CORS origins', async () => {
    const ok = await consoleApp.inject({
      method: 'OPTIONS',
      url: '/api/v1/echo',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.example.com');
    const other = await consoleApp.inject({
      method: 'OPTIONS',
      url: '/api/v1/echo',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('answers a literal * without credentials when any origin is allowed', async () => {
    const app = await createGatewayApp(
      {
        style: 'console',
        title: 't',
        version: '1',
        config: { SVC_CORS_ORIGINS: ['*'], SVC_ENABLE_DEBUG_ENDPOINTS: false },
        log,
      },
      (a) => {
        a.get('/api/v1/x', async () => ({ ok: true }));
      },
    );
    try {
      const res = await app.inject({
        method: 'OPTIONS',
        url: '/api/v1/x',
        headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'GET' },
      });
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    } finally {
      await app.close();
    }
  });

  it('keeps credentials in query strings and paths out of the access log', async () => {
    const lines: string[] = [];
    const capture = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    const app = await createGatewayApp(
      {
        style: 'console',
        title: 't',
        version: '1',
        config: { SVC_CORS_ORIGINS: [], SVC_ENABLE_DEBUG_ENDPOINTS: false },
        log: capture,
      },
      (a) => {
        a.get('/api/v1/callback', async () => ({ ok: true }));
        a.get('/api/v1/hooks/:token', async () => ({ ok: true }));
      },
    );
    try {
      await app.inject({ method: 'GET', url: '/api/v1/callback?code=SECRET-CODE&state=SECRET-STATE&page=2' });
      await app.inject({ method: 'GET', url: '/api/v1/hooks/SECRET-PATH-TOKEN' });
      await app.inject({ method: 'GET', url: '/api/v1/hooks/h' });
      const written = lines.join('\n');
      expect(written).toContain('"url":"/api/v1/callback?code=REDACTED&state=REDACTED&page=2"');
      expect(written).toContain('"url":"/api/v1/hooks/REDACTED"');
      expect(written).not.toContain('/api/v1/hooks/h"');
      expect(written).not.toContain('SECRET');
    } finally {
      await app.close();
    }
  });

  it('hides /metrics and /swagger unless debug endpoints are enabled', async () => {
    for (const url of ['/metrics', '/swagger', '/swagger/json']) {
      const res = await consoleApp.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
    }
    const debugApp = await buildApp('console', true);
    try {
      await debugApp.inject({ method: 'POST', url: '/api/v1/echo', payload: { name: 'm', times: 1 } });
      const metrics = await debugApp.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.statusCode).toBe(200);
      expect(metrics.body).toMatch(/http_requests_total\{method="POST",route="\/api\/v1\/echo",status="200"\} 1/);
      const doc = await debugApp.inject({ method: 'GET', url: '/swagger/json' });
      expect(doc.statusCode).toBe(200);
      const openapi = doc.json();
      expect(
        openapi.paths['/api/v1/echo'].post.requestBody.content['application/json'].schema.properties.name.type,
      ).toBe('string');
      // A paged route documents the list envelope.
      const list = openapi.paths['/api/v1/numbers'].get.responses['200'].content['application/json'].schema;
      expect(list.properties.data.type).toBe('array');
      expect(list.properties.meta.properties.per_page.type).toBe('integer');
      // Reply schemas come from the subject catalogue.
      expect(
        openapi.paths['/api/v1/echo'].post.responses['200'].content['application/json'].schema.properties.data
          .properties.greeting.type,
      ).toBe('string');
      const ui = await debugApp.inject({ method: 'GET', url: '/swagger/' });
      expect(ui.statusCode).toBe(200);
    } finally {
      await debugApp.close();
    }
  });
});
