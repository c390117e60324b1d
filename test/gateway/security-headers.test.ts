import type { LightMyRequestResponse } from 'fastify';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOneTimeToken } from '../../actors/identity/one-time-tokens.ts';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { bridge, type GatewayDeps } from '../../gateway/shared/bridge.ts';
import { testSigner } from '../support/env.ts';
import { createUser, tokenFor, totpCode } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';
import { rawRequest } from './raw-http.ts';

/**
 * Issue 25, item 9 (and item 11's accept-invite): the API profile of security headers, per route class. Every answer
 * carries nosniff, no-referrer and a policy that forbids framing; every token and authenticated answer (and every
 * other one, unless its route chose its own caching) is `Cache-Control: no-store`; HSTS only for an https service.
 */
type Headers = LightMyRequestResponse['headers'] | Record<string, string>;

function expectApiProfile(headers: Headers, what: string): void {
  expect(headers['x-content-type-options'], what).toBe('nosniff');
  expect(headers['cache-control'], what).toBe('no-store');
  expect(headers['referrer-policy'], what).toBe('no-referrer');
  expect(headers['content-security-policy'], what).toBe("default-src 'none';frame-ancestors 'none'");
  expect(headers['x-frame-options'], what).toBe('DENY');
  expect(headers['strict-transport-security'], what).toBeUndefined();
}

describe('the gateway app factory', () => {
  const log = createLogger('silent');
  const build = (publicUrl?: string): Promise<GatewayApp> => {
    const deps: GatewayDeps<TestCat> = {
      // Nothing here reaches an actor: the route refuses the caller first.
      caller: new Caller(() => undefined, testCatalogue, testSigner()),
      requestTimeoutMs: 1000,
      auth: { authenticate: async () => Promise.reject(new DomainError('unauthorized', 'missing credentials')) },
    };
    return createGatewayApp(
      {
        style: 'console',
        title: 't',
        version: '1',
        ...(publicUrl ? { publicUrl } : {}),
        config: { SVC_CORS_ORIGINS: [], SVC_ENABLE_DEBUG_ENDPOINTS: false },
        log,
      },
      (app) => {
        bridge(app, deps, {
          method: 'GET',
          url: '/api/v1/sleep/:ms',
          subject: 'svc.rtest.sleep',
          auth: 'authenticated',
          params: z.object({ ms: z.coerce.number().int() }),
          input: ({ params }) => params,
        });
        app.get('/cached', async (_req, reply) =>
          reply.header('cache-control', 'public, max-age=60').send({ ok: true }),
        );
      },
    );
  };
  let app: GatewayApp;
  let port: number;
  beforeAll(async () => {
    app = await build();
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(() => app?.close());

  it('refusals of every kind carry the profile: authentication, validation, unknown route', async () => {
    expectApiProfile((await app.inject({ method: 'GET', url: '/api/v1/sleep/5' })).headers, '401');
    expectApiProfile((await app.inject({ method: 'GET', url: '/api/v1/sleep/x' })).headers, '400');
    expectApiProfile((await app.inject({ method: 'GET', url: '/api/v1/nothing-here' })).headers, '404');
  });

  it('answers written before Fastify (parser errors, a refused Expect) are nosniff and no-store too', async () => {
    const parser = await rawRequest(
      port,
      'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ' + 'a'.repeat(20_000) + '\r\n\r\n',
    );
    expect(parser.responses[0]?.status).toBe(431);
    const expectation = await rawRequest(
      port,
      'POST /api/v1/sleep/1 HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}',
    );
    expect(expectation.responses[0]?.status).toBe(417);
    for (const res of [parser.responses[0]!, expectation.responses[0]!]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('keeps the caching a route chose itself', async () => {
    const res = await app.inject({ method: 'GET', url: '/cached' });
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('sends HSTS only when the public URL is https', async () => {
    const secure = await build('https://console.example.net');
    try {
      const res = await secure.inject({ method: 'GET', url: '/api/v1/sleep/5' });
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    } finally {
      await secure.close();
    }
    const plain = await build('http://localhost:8080');
    try {
      expect(
        (await plain.inject({ method: 'GET', url: '/api/v1/sleep/5' })).headers['strict-transport-security'],
      ).toBeUndefined();
    } finally {
      await plain.close();
    }
  });
});

describe('the console: token and authenticated answers', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem();
  }, 120_000);
  afterAll(() => sys?.stop());

  const post = (url: string, payload: object, token?: string): Promise<LightMyRequestResponse> =>
    sys.http({ method: 'POST', url, payload, ...(token ? { token } : {}) });

  it('login (tokens or the MFA challenge), mfa/verify and refresh', async () => {
    const plain = await createUser(sys, { mfa: false });
    const direct = await post('/api/v1/auth/login', { email: plain.email, password: plain.password });
    expect(direct.statusCode, direct.body).toBe(200);
    expectApiProfile(direct.headers, 'login 200');

    const user = await createUser(sys);
    const challenge = await post('/api/v1/auth/login', { email: user.email, password: user.password });
    expect(challenge.statusCode, challenge.body).toBe(202);
    expectApiProfile(challenge.headers, 'login 202');
    const mfaToken = (challenge.json() as { data: { mfa_token: string } }).data.mfa_token;
    const verify = await post('/api/v1/auth/mfa/verify', {
      mfa_token: mfaToken,
      code: totpCode(user.totpSecret!, sys.clock),
    });
    expect(verify.statusCode, verify.body).toBe(200);
    expectApiProfile(verify.headers, 'mfa/verify');

    const tokens = (verify.json() as { data: { refresh_token: string } }).data;
    const refresh = await post('/api/v1/auth/refresh', { refresh_token: tokens.refresh_token });
    expect(refresh.statusCode, refresh.body).toBe(200);
    expectApiProfile(refresh.headers, 'refresh');
  });

  it('accept-invite answers its tokens with no-store', async () => {
    const invited = await createUser(sys, { status: 'invited', mfa: false });
    const raw = await createOneTimeToken(
      (await sys.stores.orm()).em.fork(),
      { clock: sys.clock },
      invited.id,
      'invite',
    );
    const res = await post('/api/v1/auth/accept-invite', { token: raw, password: 'a new passphrase for 2026' });
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as { data: { access_token: string } }).data.access_token).toBeTruthy();
    expectApiProfile(res.headers, 'accept-invite');
  });

  it('authenticated reads, a public read and a refusal', async () => {
    const user = await createUser(sys, { superAdmin: true });
    const token = await tokenFor(sys, user);
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token });
    expect(me.statusCode, me.body).toBe(200);
    expectApiProfile(me.headers, 'me');
    const clients = await sys.http({ method: 'GET', url: '/api/v1/clients', token });
    expect(clients.statusCode, clients.body).toBe(200);
    expectApiProfile(clients.headers, 'clients');
    const config = await sys.http({ method: 'GET', url: '/api/v1/auth/config' });
    expect(config.statusCode, config.body).toBe(200);
    expectApiProfile(config.headers, 'auth/config');
    const refused = await sys.http({ method: 'GET', url: '/api/v1/clients', token: 'not-a-token' });
    expect(refused.statusCode).toBe(401);
    expectApiProfile(refused.headers, '401');
    // The invoicing gateway has the same profile.
    const invoices = await sys.invoicingHttp({ method: 'GET', url: '/api/v1/invoices', token });
    expect(invoices.statusCode, invoices.body).toBe(200);
    expectApiProfile(invoices.headers, 'invoices');
  });
});
