import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayApp } from '../../gateway/shared/app.ts';
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
