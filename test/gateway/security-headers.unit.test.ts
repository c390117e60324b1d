import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../gateway/shared/app.ts';
import { helmetHeaders } from '../../gateway/shared/plugins/security-headers.ts';
import { buildProfileApp, expectApiProfile } from './security-profile.ts';

/** The API profile of security headers (security-profile.ts) on a gateway of its own, through Fastify's inject. */
describe('the gateway app factory', () => {
  let app: GatewayApp;
  beforeAll(async () => {
    app = await buildProfileApp();
  });
  afterAll(() => app?.close());

  it('refusals of every kind carry the profile: authentication, validation, unknown route', async () => {
    expectApiProfile((await app.inject({ method: 'GET', url: '/api/v1/sleep/5' })).headers, '401');
    expectApiProfile((await app.inject({ method: 'GET', url: '/api/v1/sleep/x' })).headers, '400');
    expectApiProfile((await app.inject({ method: 'GET', url: '/api/v1/nothing-here' })).headers, '404');
  });

  it("sends helmet's whole header set for the profile, computed once, and nothing it removes", async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/sleep/5' });
    const sent = Object.fromEntries(
      Object.entries(res.headers).filter(
        ([k]) =>
          !['content-type', 'content-length', 'date', 'connection', 'cache-control', 'x-request-id'].includes(k) &&
          !k.startsWith('access-control-') &&
          k !== 'vary',
      ),
    );
    expect(sent).toEqual({
      'content-security-policy': "default-src 'none';frame-ancestors 'none'",
      'cross-origin-opener-policy': 'same-origin',
      'origin-agent-cluster': '?1',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'x-dns-prefetch-control': 'off',
      'x-download-options': 'noopen',
      'x-frame-options': 'DENY',
      'x-permitted-cross-domain-policies': 'none',
      'x-xss-protection': '0',
    });
    // What helmet removes (X-Powered-By) is left out, and an option of a header it does not send drops it.
    expect(helmetHeaders({ xPoweredBy: false, xXssProtection: false, frameguard: false })).not.toHaveProperty(
      'x-xss-protection',
    );
    expect(helmetHeaders({})).not.toHaveProperty('x-powered-by');
  });

  it('lets a route replace a header or drop it', async () => {
    const res = await app.inject({ method: 'GET', url: '/framed' });
    expect(res.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect(res.headers['x-frame-options']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('keeps the caching a route chose itself', async () => {
    const res = await app.inject({ method: 'GET', url: '/cached' });
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('sends HSTS only when the public URL is https', async () => {
    const secure = await buildProfileApp('https://console.example.net');
    try {
      const res = await secure.inject({ method: 'GET', url: '/api/v1/sleep/5' });
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    } finally {
      await secure.close();
    }
    const plain = await buildProfileApp('http://localhost:8080');
    try {
      expect(
        (await plain.inject({ method: 'GET', url: '/api/v1/sleep/5' })).headers['strict-transport-security'],
      ).toBeUndefined();
    } finally {
      await plain.close();
    }
  });
});
