import type { LightMyRequestResponse } from 'fastify';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOneTimeToken } from '../../actors/identity/one-time-tokens.ts';
import type { GatewayApp } from '../../gateway/shared/app.ts';
import { createUser, tokenFor, totpCode } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { rawRequest } from './raw-http.ts';
import { buildProfileApp, expectApiProfile } from './security-profile.ts';

/**
 * The API profile of security headers (security-profile.ts) on the answers written on the socket before Fastify, and
 * on the running system's routes. (Through inject on a gateway of its own: security-headers.unit.test.ts.)
 */
describe('the gateway app factory, on a socket', () => {
  let app: GatewayApp;
  let port: number;
  beforeAll(async () => {
    app = await buildProfileApp();
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  afterAll(() => app?.close());

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
