import type { NatsConnection } from '@nats-io/transport-node';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { openValkeyKv, type KvStore } from '../../platform/stores/kv.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { bridge, type GatewayDeps } from '../../gateway/shared/bridge.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testSigner } from '../support/env.ts';

/**
 * `Idempotency-Key` on creating POSTs: the first complete answer is kept (Valkey, 24 h) per caller and key; a repeat
 * gets it again, another body under the key is 422, a repeat while the first runs is 409.
 */
const log = createLogger('silent');
const VALKEY = process.env.SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379';
const prefix = `test:idem:${randomBytes(4).toString('hex')}:`;
const users: Record<string, string> = { alice: randomUUID(), bob: randomUUID() };

let nc: NatsConnection;
let host: ActorHost<TestCat>;
let kv: KvStore;
const runs = new Map<string, number>();
const ran = (name: string): number => runs.get(name) ?? 0;

async function buildApp(style: 'console' | 'invoicing', store: KvStore, timeoutMs = 2000): Promise<GatewayApp> {
  const deps: GatewayDeps<TestCat> = {
    caller: new Caller(() => nc, testCatalogue, testSigner()),
    requestTimeoutMs: timeoutMs,
    idempotency: store,
    auth: {
      authenticate: async (req): Promise<CallerContext> => {
        const who = /^Bearer (\w+)$/.exec(req.headers.authorization ?? '')?.[1];
        const id = who ? users[who] : undefined;
        if (!id) throw new DomainError('unauthorized', 'missing or invalid credentials');
        return {
          request_id: req.id,
          principal: {
            kind: 'user',
            user_id: id,
            session_id: id,
            email: `${who}@example.com`,
            is_super_admin: false,
            mfa_enabled: true,
          },
        };
      },
    },
  };
  return createGatewayApp(
    { style, title: 't', version: '1', config: { SVC_CORS_ORIGINS: [], SVC_ENABLE_DEBUG_ENDPOINTS: false }, log },
    (app) => {
      const Echo = z.object({ name: z.string().min(1), times: z.number().int() });
      bridge(app, deps, {
        method: 'POST',
        url: '/api/v1/things',
        subject: 'svc.rtest.echo',
        auth: 'authenticated',
        body: Echo,
        input: ({ body }) => body,
        status: 201,
      });
      bridge(app, deps, {
        method: 'POST',
        url: '/api/v1/plain',
        subject: 'svc.rtest.echo',
        auth: 'authenticated',
        body: Echo,
        input: ({ body }) => body,
      });
      bridge(app, deps, {
        method: 'POST',
        url: '/api/v1/slow-things',
        subject: 'svc.rtest.sleep',
        auth: 'authenticated',
        body: z.object({ ms: z.number().int() }),
        input: ({ body }) => body,
        status: 201,
      });
      bridge(app, deps, {
        method: 'POST',
        url: '/api/v1/failing',
        subject: 'svc.rtest.fail',
        auth: 'authenticated',
        body: z.object({ code: z.enum(['conflict', 'internal_error', 'unavailable']) }),
        input: ({ body }) => body,
        status: 201,
      });
    },
  );
}

let app: GatewayApp;
let invoicing: GatewayApp;

beforeAll(async () => {
  nc = await connectNats(NATS_URL, 'gw-idem-test', log, NATS_CREDS, NATS_CA);
  host = new ActorHost(nc, testCatalogue, testSigner(), log);
  await host.serve('rtest', 'rtest-idem', {
    'svc.rtest.echo': async ({ name }) => {
      runs.set(name, ran(name) + 1);
      return { greeting: `hi ${name} #${ran(name)}`, instance: randomUUID() };
    },
    'svc.rtest.sleep': async ({ ms }) => {
      runs.set(`sleep-${ms}`, ran(`sleep-${ms}`) + 1);
      await new Promise((r) => setTimeout(r, ms));
      return { slept: ms };
    },
    'svc.rtest.fail': async ({ code }) => {
      runs.set(`fail-${code}`, ran(`fail-${code}`) + 1);
      throw new DomainError(code, `refused with ${code}`);
    },
  });
  kv = await openValkeyKv(VALKEY, log, prefix);
  app = await buildApp('console', kv);
  invoicing = await buildApp('invoicing', kv);
});

afterAll(async () => {
  await app?.close();
  await invoicing?.close();
  await kv?.close();
  await host?.drain(100);
  await nc?.drain();
});

const post = (a: GatewayApp, url: string, payload: Record<string, unknown>, key?: string, who = 'alice') =>
  a.inject({
    method: 'POST',
    url,
    payload,
    headers: { authorization: `Bearer ${who}`, ...(key !== undefined ? { 'idempotency-key': key } : {}) },
  });

describe('Idempotency-Key', () => {
  it('answers a repeat with the stored answer without running the request again', async () => {
    const key = randomUUID();
    const first = await post(app, '/api/v1/things', { name: 'once', times: 1 }, key);
    expect(first.statusCode).toBe(201);
    const again = await post(app, '/api/v1/things', { times: 1, name: 'once' }, key); // same body, other field order
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(ran('once')).toBe(1);
  });

  it('keeps the answer 24 hours, per caller', async () => {
    const key = `key ${randomUUID()}`;
    await post(app, '/api/v1/things', { name: 'ttl', times: 1 }, key);
    const slot = `idem:user:${users.alice}:${createHash('sha256').update(key).digest('hex')}`;
    const ttl = await kv.ttlMs(slot);
    expect(ttl).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(24 * 3600_000);
    // Another caller's same key is another request.
    const bob = await post(app, '/api/v1/things', { name: 'ttl', times: 1 }, key, 'bob');
    expect(bob.statusCode).toBe(201);
    expect(bob.headers['idempotent-replayed']).toBeUndefined();
    expect(ran('ttl')).toBe(2);
  });

  it('answers 422 for a different request under the same key', async () => {
    const key = randomUUID();
    expect((await post(app, '/api/v1/things', { name: 'a422', times: 1 }, key)).statusCode).toBe(201);
    const other = await post(app, '/api/v1/things', { name: 'a422', times: 2 }, key, 'alice');
    expect(other.statusCode).toBe(422);
    expect(other.json().error).toMatchObject({
      code: 'unprocessable_entity',
      request_id: other.headers['x-request-id'],
    });
    const otherRoute = await post(app, '/api/v1/slow-things', { ms: 1 }, key);
    expect(otherRoute.statusCode).toBe(422);
    expect(ran('a422')).toBe(1);
    const key2 = randomUUID();
    await post(invoicing, '/api/v1/things', { name: 'i422', times: 1 }, key2);
    const inv = await post(invoicing, '/api/v1/things', { name: 'i422-other', times: 1 }, key2);
    expect(inv.statusCode).toBe(422);
    expect(inv.json().error.code).toBe('UNPROCESSABLE_ENTITY');
  });

  it('answers 409 to a repeat while the first is still running, then the stored answer', async () => {
    const key = randomUUID();
    // 1.2 s of work: room for the repeat to arrive while it runs, even on a loaded machine.
    const first = post(app, '/api/v1/slow-things', { ms: 1200 }, key);
    await vi.waitFor(() => expect(ran('sleep-1200')).toBe(1), { timeout: 1_000, interval: 5 });
    const during = await post(app, '/api/v1/slow-things', { ms: 1200 }, key);
    expect(during.statusCode).toBe(409);
    expect(during.json().error.code).toBe('conflict');
    expect(during.json().error.message).toMatch(/still being processed/);
    expect((await first).statusCode).toBe(201);
    const after = await post(app, '/api/v1/slow-things', { ms: 1200 }, key);
    expect(after.statusCode).toBe(201);
    expect(after.json()).toEqual({ data: { slept: 1200 } });
    expect(ran('sleep-1200')).toBe(1);
  });

  it('keeps a final 4xx but not a 5xx, so the client can retry those', async () => {
    const k409 = randomUUID();
    const c1 = await post(app, '/api/v1/failing', { code: 'conflict' }, k409);
    const c2 = await post(app, '/api/v1/failing', { code: 'conflict' }, k409);
    expect([c1.statusCode, c2.statusCode]).toEqual([409, 409]);
    expect(c2.json().error).toEqual({
      code: 'conflict',
      message: 'refused with conflict',
      request_id: c2.headers['x-request-id'],
    });
    expect(c2.headers['idempotent-replayed']).toBe('true');
    expect(ran('fail-conflict')).toBe(1);
    for (const code of ['internal_error', 'unavailable'] as const) {
      const key = randomUUID();
      const r1 = await post(app, '/api/v1/failing', { code }, key);
      const r2 = await post(app, '/api/v1/failing', { code }, key);
      expect(r1.statusCode).toBeGreaterThanOrEqual(500);
      expect(r2.statusCode).toBe(r1.statusCode);
      expect(r2.headers['idempotent-replayed']).toBeUndefined();
      expect(ran(`fail-${code}`)).toBe(2);
    }
  });

  it('gives the retry after a 504 the real outcome instead of running it twice', async () => {
    // A 1 s deadline and 1.5 s of work: the keyed call may run one more timeout (to 2 s), which leaves it 0.5 s.
    const short = await buildApp('console', kv, 1000);
    try {
      const key = randomUUID();
      const t0 = Date.now();
      const first = await post(short, '/api/v1/slow-things', { ms: 1500 }, key);
      expect(first.statusCode).toBe(504);
      expect(Date.now() - t0).toBeLessThan(1400);
      // The write is still going on: the retry is told so instead of starting a second one.
      expect((await post(short, '/api/v1/slow-things', { ms: 1500 }, key)).statusCode).toBe(409);
      // Retries get 409 until the outcome is kept, then that outcome.
      let retry = await post(short, '/api/v1/slow-things', { ms: 1500 }, key);
      for (let i = 0; retry.statusCode === 409 && i < 100; i++) {
        await new Promise((r) => setTimeout(r, 50));
        retry = await post(short, '/api/v1/slow-things', { ms: 1500 }, key);
      }
      expect(retry.statusCode).toBe(201);
      expect(retry.json()).toEqual({ data: { slept: 1500 } });
      expect(ran('sleep-1500')).toBe(1);
    } finally {
      await short.close();
    }
  });

  it('refuses a malformed key with 400 and leaves routes that do not create alone', async () => {
    for (const key of ['x'.repeat(256), 'tab\there', 'é']) {
      const res = await post(app, '/api/v1/things', { name: 'bad-key', times: 1 }, key);
      expect(res.statusCode, key).toBe(400);
      expect(res.json().error.message).toMatch(/idempotency-key/);
    }
    expect(ran('bad-key')).toBe(0);
    const key = randomUUID();
    await post(app, '/api/v1/plain', { name: 'plain', times: 1 }, key);
    const again = await post(app, '/api/v1/plain', { name: 'plain', times: 1 }, key);
    expect(again.statusCode).toBe(200);
    expect(ran('plain')).toBe(2);
  });

  it('answers 503 without running the request when the store is unreachable', async () => {
    const down = await openValkeyKv('redis://127.0.0.1:1', log, prefix, { readyTimeoutMs: 200 });
    const offline = await buildApp('console', down);
    try {
      const keyed = await post(offline, '/api/v1/things', { name: 'down', times: 1 }, randomUUID());
      expect(keyed.statusCode).toBe(503);
      expect(keyed.json().error.code).toBe('service_unavailable');
      expect(ran('down')).toBe(0);
      // Without a key nothing depends on the store.
      expect((await post(offline, '/api/v1/things', { name: 'down', times: 1 })).statusCode).toBe(201);
    } finally {
      await offline.close();
      await down.close();
    }
  });
});
