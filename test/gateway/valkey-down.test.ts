import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { openValkeyKv } from '../../platform/stores/kv.ts';
import { createUser, tokenFor } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * Valkey is a cache: the system must start and answer without it, never holding a request past its deadline while
 * the client waits for a server that is not there (rate limits let requests through, access is resolved without
 * the cache, what needs the store answers 503).
 */
const CLOSED = 'redis://127.0.0.1:1';

describe('a Valkey store that is down', () => {
  it('fails commands at once instead of queueing them until a reconnect', async () => {
    const t0 = Date.now();
    const kv = await openValkeyKv(CLOSED, createLogger('silent'), 'test:', { readyTimeoutMs: 1000 });
    try {
      expect(Date.now() - t0).toBeLessThan(1500);
      const t1 = Date.now();
      await expect(kv.get('k')).rejects.toThrow();
      await expect(kv.hitWindow('w', 1000)).rejects.toThrow();
      expect(Date.now() - t1).toBeLessThan(600);
    } finally {
      await kv.close();
    }
  });
});

describe('gateways started while Valkey is down', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ SVC_VALKEY_URL: CLOSED, SVC_REQUEST_TIMEOUT_MS: '3000' });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('answer public routes and probes promptly', async () => {
    for (const url of ['/api/v1/auth/config', '/readyz', '/healthz', '/api/v1/auth/config']) {
      const t0 = Date.now();
      const res = await sys.http({ method: 'GET', url });
      expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
      expect(Date.now() - t0, url).toBeLessThan(2000); // well inside the 3 s deadline a wait for Valkey would use up
    }
  });

  it('answer authenticated routes from the database while the access cache is unreachable', async () => {
    // Gateway and resolver both treat an unreadable access cache as a miss: access is resolved from PostgreSQL.
    const user = await createUser(sys);
    const token = await tokenFor(sys, user);
    const t0 = Date.now();
    const res = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token });
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.user.id).toBe(user.id);
  });

  it('answer what needs the store with the envelope inside the deadline, never a 500', async () => {
    const t0 = Date.now();
    const res = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: `nobody-${sys.tag}@example.com`, password: 'not the password at all' },
    });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect([401, 503]).toContain(res.statusCode);
    expect(res.json().error).toMatchObject({ code: expect.any(String), request_id: res.headers['x-request-id'] });
  });
});
