import type { FastifyRequest } from 'fastify';
import type { LightMyRequestResponse } from 'fastify';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { openValkeyKv, type KvStore } from '../../platform/stores/kv.ts';
import { DomainError } from '../../contracts/errors.ts';
import { RateWindows, rateLimitGuard, type Verdict } from '../../gateway/shared/rate-limit.ts';
import { createUser, tokenFor } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * docs/api/identity.md#authentication-and-caller-context: public auth routes SVC_AUTH_RATE_LIMIT (5) per minute per
 * IP, every other route SVC_API_RATE_LIMIT per minute per IP; 429 with the envelope and Retry-After; counters shared
 * through Valkey.
 */

const API_LIMIT = 4;
let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({ SVC_AUTH_RATE_LIMIT: '5', SVC_API_RATE_LIMIT: String(API_LIMIT) });
});

afterAll(async () => {
  await sys?.stop();
});

/** A fresh address each time (the key prefix is per run), so each test starts with empty windows. */
let lastIp = 0;
const newIp = (): string => `198.51.100.${++lastIp}`;

function expectRateLimited(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(429);
  expect(res.json()).toEqual({
    error: { code: 'too_many_requests', message: expect.stringMatching(/rate limit/), request_id: expect.any(String) },
  });
  expect(res.json().error.request_id).toBe(res.headers['x-request-id']);
  const retryAfter = Number(res.headers['retry-after']);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('public auth rate limit (SVC_AUTH_RATE_LIMIT)', () => {
  it('answers the 6th public auth request from one IP within a minute with 429; another IP is unaffected', async () => {
    const ip = newIp();
    const other = newIp();
    const from = (remoteAddress: string) => (url: string, payload: object) =>
      sys.http({ method: 'POST', url, payload, remoteAddress });
    const post = from(ip);
    // One request on each public auth route: they share one budget. Different e-mails, so no lockout is involved.
    const answers = [
      await post('/api/v1/auth/login', { email: `rl-1-${sys.tag}@example.com`, password: 'not the password 1' }),
      await post('/api/v1/auth/refresh', { refresh_token: 'A'.repeat(43) }),
      await post('/api/v1/auth/forgot-password', { email: `rl-2-${sys.tag}@example.com` }),
      await post('/api/v1/auth/reset-password', { token: 'B'.repeat(43), new_password: 'a long new passphrase 1' }),
      await post('/api/v1/auth/accept-invite', { token: 'C'.repeat(43), password: 'a long new passphrase 2' }),
    ];
    expect(answers.map((r) => r.statusCode)).toEqual([401, 401, 200, 400, 400]);

    const sixth = await post('/api/v1/auth/login', {
      email: `rl-3-${sys.tag}@example.com`,
      password: 'not the password 3',
    });
    expectRateLimited(sixth);
    // Refused before anything else: even a malformed body gets the 429, not a 400.
    expectRateLimited(await post('/api/v1/auth/mfa/verify', {}));
    // Agent enrolment is public too and counts on the same budget.
    expectRateLimited(await post('/api/v1/agents/enroll', { install_token: 'x', public_key: 'y', hostname: 'z' }));
    expectRateLimited(await post('/api/v1/agents/enroll/complete', {}));
    // ...and spends it: five enrolment attempts leave no login for that address.
    const enroller = from(newIp());
    for (let i = 0; i < 5; i++)
      expect(
        (await enroller('/api/v1/agents/enroll', { install_token: `t${i}`, public_key: 'not-a-key', hostname: 'h' }))
          .statusCode,
      ).toBe(400);
    expectRateLimited(
      await enroller('/api/v1/auth/login', { email: `rl-5-${sys.tag}@example.com`, password: 'not the password 5' }),
    );

    // Another address has its own window.
    const elsewhere = await from(other)('/api/v1/auth/login', {
      email: `rl-4-${sys.tag}@example.com`,
      password: 'not the password 4',
    });
    expect(elsewhere.statusCode).toBe(401);
    // The general class is a separate budget: the limited address still reaches other routes.
    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/config', remoteAddress: ip })).statusCode).toBe(200);
  });

  it('keeps the counters in Valkey, where every gateway instance sees them', async () => {
    const ip = newIp();
    for (let i = 0; i < 2; i += 1)
      await sys.http({
        method: 'POST',
        url: '/api/v1/auth/forgot-password',
        payload: { email: `rl-kv-${sys.tag}@example.com` },
        remoteAddress: ip,
      });
    const kv = await sys.stores.kv();
    expect(kv.kind).toBe('valkey');
    expect(await kv.get(`rl:auth:${ip}`)).toBe('2');
  });
});

describe('general rate limit (SVC_API_RATE_LIMIT)', () => {
  it('applies to authenticated routes, refused requests and unknown routes alike', async () => {
    const user = await createUser(sys);
    const token = await tokenFor(sys, user);
    const ip = newIp();
    const get = (url: string, withToken = true) =>
      sys.http({ method: 'GET', url, remoteAddress: ip, ...(withToken ? { token } : {}) });
    expect((await get('/api/v1/permissions')).statusCode).toBe(200);
    expect((await get('/api/v1/auth/me')).statusCode).toBe(200);
    // Counted even when refused or unknown.
    expect((await get('/api/v1/permissions', false)).statusCode).toBe(401);
    expect((await get('/api/v1/no-such-route')).statusCode).toBe(404);
    expectRateLimited(await get('/api/v1/permissions'));
    expectRateLimited(await get('/api/v1/no-such-route'));

    // The public auth budget of that address is untouched.
    const login = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: user.email, password: 'wrong wrong wrong' },
      remoteAddress: ip,
    });
    expect(login.statusCode).toBe(401);
    // Another address is unaffected; probes are never limited.
    expect(
      (await sys.http({ method: 'GET', url: '/api/v1/permissions', token, remoteAddress: newIp() })).statusCode,
    ).toBe(200);
    for (let i = 0; i < API_LIMIT + 1; i += 1)
      expect((await sys.http({ method: 'GET', url: '/healthz', remoteAddress: ip })).statusCode).toBe(200);
  });
});

describe('rate limit guard', () => {
  it('shares one window between gateway instances with separate Valkey connections', async () => {
    const log = createLogger('silent');
    const url = sys.config.SVC_VALKEY_URL!;
    const prefix = `svc-test:rl-${randomUUID().slice(0, 8)}:`;
    const [kvA, kvB] = [await openValkeyKv(url, log, prefix), await openValkeyKv(url, log, prefix)];
    try {
      const limits = { auth: 5, api: 1000 };
      const [a, b] = [rateLimitGuard(kvA, limits), rateLimitGuard(kvB, limits)];
      const req = { ip: '192.0.2.10' } as FastifyRequest;
      for (let i = 0; i < 3; i += 1) await a(req, 'auth');
      for (let i = 0; i < 2; i += 1) await b(req, 'auth');
      const refused = await b(req, 'auth').then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(DomainError);
      expect(refused).toMatchObject({
        code: 'too_many_requests',
        details: { retry_after_seconds: expect.any(Number) },
      });
      await expect(a({ ip: '192.0.2.11' } as FastifyRequest, 'auth')).resolves.toBeUndefined();
    } finally {
      await kvA.close();
      await kvB.close();
    }
  });
});

// Against Valkey; a reservation answered after its window ended, on the in-process store: rate-limit.unit.test.ts.
describe('RateWindows (hits reserved in batches)', () => {
  const log = createLogger('silent');
  let kvs: KvStore[] = [];
  const open = async (prefix = `svc-test:rw-${randomUUID().slice(0, 8)}:`): Promise<KvStore> => {
    const kv = await openValkeyKv(sys.config.SVC_VALKEY_URL!, log, prefix);
    kvs.push(kv);
    return kv;
  };
  /** The real store, its reservations counted. */
  const counted = (kv: KvStore) => {
    const calls: number[] = [];
    return {
      calls,
      kv: {
        hitWindow: (key: string, windowMs: number, hits?: number) => (
          calls.push(hits ?? 1),
          kv.hitWindow(key, windowMs, hits)
        ),
      },
    };
  };
  const allowed = (vs: Verdict[]) => vs.filter((v) => v.allowed).length;
  /** RateWindows over a store of its own, its reservations counted. */
  const countedWindows = async (limit: number, windowMs: number) => {
    const kv = await open();
    const { calls, kv: spy } = counted(kv);
    return { kv, calls, windows: new RateWindows(spy, limit, windowMs) };
  };
  /** `n` hits of `key`, each after the previous one's verdict. */
  const hitsInTurn = async (windows: RateWindows, key: string, n: number): Promise<Verdict[]> => {
    const verdicts: Verdict[] = [];
    for (let i = 0; i < n; i++) verdicts.push(await windows.hit(key));
    return verdicts;
  };

  afterAll(async () => {
    await Promise.all(kvs.map((kv) => kv.close()));
    kvs = [];
  });

  it('lets exactly the limit through, asking the store once per batch, and refuses the rest until the window ends', async () => {
    const { kv, calls, windows } = await countedWindows(200, 60_000);
    const verdicts = await hitsInTurn(windows, 'rl:api:a', 260);
    expect(allowed(verdicts)).toBe(200);
    expect(verdicts.slice(0, 200).every((v) => v.allowed)).toBe(true);
    // Batches of 1, 2, 4, 8 then limit / 20 = 10: about 23 round trips for 200 hits; refusals ask nothing.
    expect(calls.slice(0, 5)).toEqual([1, 2, 4, 8, 10]);
    expect(calls.length).toBeLessThan(30);
    for (const v of verdicts.slice(200)) {
      expect(v.allowed).toBe(false);
      if (!v.allowed) expect(v.resetMs).toBeGreaterThan(0);
      if (!v.allowed) expect(v.resetMs).toBeLessThanOrEqual(60_000);
    }
    // The shared counter holds what was reserved: the limit and no more than one batch beyond it.
    expect(Number(await kv.get('rl:api:a'))).toBeGreaterThanOrEqual(200);
    expect(Number(await kv.get('rl:api:a'))).toBeLessThanOrEqual(210);
  });

  it('counts an occasional address exactly: one hit, one reservation of one', async () => {
    const kv = await open();
    const windows = new RateWindows(kv, 1_000, 60_000);
    expect(await windows.hit('rl:api:once')).toEqual({ allowed: true });
    expect(await kv.get('rl:api:once')).toBe('1');
  });

  it('shares one reservation in flight between concurrent hits, and lets exactly the limit through', async () => {
    const { kv, calls, windows } = await countedWindows(200, 60_000);
    const verdicts = await Promise.all(Array.from({ length: 300 }, () => windows.hit('rl:api:burst')));
    expect(allowed(verdicts)).toBe(200);
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(Number(await kv.get('rl:api:burst'))).toBe(300);
  });

  it('never lets two instances together pass more than the limit', async () => {
    // Two connections on one prefix: two gateway instances.
    const shared = `svc-test:rw-${randomUUID().slice(0, 8)}:`;
    const [sharedA, sharedB] = [await open(shared), await open(shared)];
    const [a, b] = [new RateWindows(sharedA, 300, 60_000), new RateWindows(sharedB, 300, 60_000)];
    const verdicts: Verdict[] = [];
    for (let i = 0; i < 400; i++) {
      const group = await Promise.all(
        Array.from({ length: 1 + (i % 3) }, (_, j) => ((i + j) % 2 ? a : b).hit('rl:api:spread')),
      );
      verdicts.push(...group);
    }
    const passed = allowed(verdicts);
    expect(passed).toBeLessThanOrEqual(300);
    // What a batch leaves unused (at most limit / 20 − 1 per instance) is all that may go missing.
    expect(passed).toBeGreaterThanOrEqual(300 - 2 * 14);
  });

  it('starts over when the window ends, from a batch of one', async () => {
    // A 2 s window: the 45 hits (about 20 Valkey round trips) all land in the first one, even on a loaded machine.
    const { kv, calls, windows } = await countedWindows(40, 2_000);
    expect(allowed(await hitsInTurn(windows, 'rl:api:w', 45))).toBe(40);
    await new Promise((r) => setTimeout(r, 2_050));
    calls.length = 0;
    expect(await windows.hit('rl:api:w')).toEqual({ allowed: true });
    expect(calls).toEqual([1]);
    expect(await kv.get('rl:api:w')).toBe('1');
  });

  it('fails open through the guard when the store cannot be reached, and says so', async () => {
    const kv = await open();
    await kv.close();
    const errors: unknown[] = [];
    const guard = rateLimitGuard(kv, { auth: 5, api: 100 }, (err) => errors.push(err));
    const req = { ip: '192.0.2.99' } as FastifyRequest;
    await expect(Promise.all([guard(req, 'api'), guard(req, 'api'), guard(req, 'auth')])).resolves.toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(errors.length).toBeGreaterThanOrEqual(2);
  });
});
