import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Caller } from '../../platform/call.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { openOrm, type MikroORM } from '../../platform/stores/postgres.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { subjects } from '../../contracts/subject.ts';
import { NATS_CA, NATS_CREDS, testConfig, testSigner } from '../support/env.ts';
import { capturingLogger } from '../support/log-capture.ts';
import { waitFor } from '../support/processes.ts';

/**
 * With PostgreSQL frozen (here: a proxy between the pool and the server that stops
 * forwarding, so the shared server itself is never stopped), requests answer 503/504 within their deadline, the pool
 * is not exhausted for the requests after the thaw, a slow statement is cancelled by the server at the deadline, and
 * the wait for a pooled connection is bounded by the deadline. The outage is logged once per transition at warn.
 */

/** A TCP proxy to PostgreSQL that can stop forwarding (bytes are held, not dropped) and resume. */
class FreezableProxy {
  private paused = false;
  private held: [Socket, Buffer][] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  private readonly target: { host: string; port: number };
  constructor(target: { host: string; port: number }) {
    this.target = target;
    this.server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => this.sockets.delete(s));
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      const forward = (from: Socket, to: Socket): void => {
        from.on('data', (d: Buffer) => (this.paused ? this.held.push([to, d]) : to.write(d)));
      };
      forward(client, upstream);
      forward(upstream, client);
    });
  }
  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as AddressInfo).port;
  }
  freeze(): void {
    this.paused = true;
  }
  thaw(): void {
    this.paused = false;
    for (const [to, d] of this.held.splice(0)) if (!to.destroyed) to.write(d);
  }
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

const catalogue = subjects({
  'svc.rtpg.tx': {
    summary: 'a transaction',
    request: z.object({ sleep_s: z.number().min(0) }),
    reply: z.object({ n: z.number() }),
    errors: ['unavailable', 'timeout'],
  },
  'svc.rtpg.read': {
    summary: 'a query outside a transaction',
    request: z.object({}),
    reply: z.object({ n: z.number() }),
    errors: ['unavailable', 'timeout'],
  },
});

const config = testConfig();
const upstream = new URL(config.SVC_DB_URL);
const appName = `svc-deadline-${randomUUID().slice(0, 8)}`;
const { log, lines } = capturingLogger('debug');

let proxy: FreezableProxy;
let orm: MikroORM;
let pool: Pool;
let nc: NatsConnection;
let host: ActorHost<typeof catalogue>;
let caller: Caller<typeof catalogue>;
/** A connection that never goes through the proxy, to look at the server. */
let direct: MikroORM;
/** Handlers still running: a handler stuck on the frozen store past its deadline holds a pooled connection. */
let running = 0;
const counted = async <T>(fn: () => Promise<T>): Promise<T> => {
  running++;
  try {
    return await fn();
  } finally {
    running--;
  }
};

const ctx = () => anonymousContext(randomUUID());
const POOL_MAX = 3;

beforeAll(async () => {
  proxy = new FreezableProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
  const port = await proxy.listen();
  const viaProxy = new URL(config.SVC_DB_URL);
  viaProxy.port = String(port);
  orm = await openOrm({ url: viaProxy.toString(), poolMax: POOL_MAX, applicationName: appName });
  direct = await openOrm({ url: config.SVC_DB_URL, poolMax: 1 });
  pool = await orm.driver.getConnection().getNativeClient();
  nc = await connectNats(config.SVC_NATS_URL, 'pg-deadline-test', log, NATS_CREDS, NATS_CA);
  host = new ActorHost(nc, catalogue, testSigner(), log);
  await host.serve('rtpg', 'rtpg', {
    'svc.rtpg.tx': async ({ sleep_s }) =>
      counted(() =>
        orm.em.fork().transactional(async (em) => {
          const [row] = await em.execute<{ n: number }[]>(`SELECT 1 AS n, pg_sleep(?)`, [sleep_s]);
          return { n: row?.n ?? 0 };
        }),
      ),
    'svc.rtpg.read': async () =>
      counted(async () => {
        const [row] = await orm.em.fork().execute<{ n: number }[]>(`SELECT 2 AS n`);
        return { n: row?.n ?? 0 };
      }),
  });
  caller = new Caller(() => nc, catalogue, testSigner(), 10_000);
});

afterAll(async () => {
  await host?.drain(100);
  await nc?.drain();
  await orm?.close(true);
  await direct?.close();
  await proxy?.close();
});

const outcome = async (p: Promise<unknown>): Promise<{ code: string; ms: number }> => {
  const t0 = Date.now();
  try {
    await p;
    return { code: 'ok', ms: Date.now() - t0 };
  } catch (err) {
    return { code: (err as { code?: string }).code ?? String(err), ms: Date.now() - t0 };
  }
};

describe('a connection that dies inside a transaction', () => {
  it('goes back to the pool although the ROLLBACK on it fails (kysely releases nothing then)', async () => {
    const settled = (): boolean => pool.waitingCount === 0 && pool.totalCount === pool.idleCount;
    await waitFor(settled, 15_000, 'the pool to settle first');
    const err = await orm.em
      .fork()
      .transactional(async (em) => {
        const [row] = await em.execute<{ pid: number }[]>(`SELECT pg_backend_pid() AS pid`);
        // The server ends this backend while the transaction holds it; the next statement and the ROLLBACK both fail.
        await direct.em.fork().execute(`SELECT pg_terminate_backend(?)`, [row!.pid]);
        await em.execute(`SELECT pg_sleep(0.05), 1 AS n`);
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Error);
    await waitFor(settled, 5_000, 'the dead connection to leave the pool').catch((e: unknown) => {
      throw new Error(`${String(e)}: total ${pool.totalCount} idle ${pool.idleCount} waiting ${pool.waitingCount}`);
    });
    // And the pool serves again.
    await expect(
      orm.em.fork().transactional(async (em) => em.execute<{ n: number }[]>(`SELECT 1 AS n`)),
    ).resolves.toEqual([{ n: 1 }]);
  });
});

describe('a frozen PostgreSQL', () => {
  it('answers 503/504 within the deadline, leaks no pooled connection, and serves again after the thaw', async () => {
    for (let i = 0; i < POOL_MAX; i++)
      await expect(caller.call('svc.rtpg.tx', { sleep_s: 0 }, ctx())).resolves.toEqual({ n: 1 });
    lines.length = 0;

    proxy.freeze();
    // Twice the pool's size: half hold connections whose queries never return, half wait for one.
    const calls = Array.from({ length: 2 * POOL_MAX }, (_, i) =>
      outcome(
        i % 2
          ? caller.call('svc.rtpg.read', {}, ctx(), { timeoutMs: 1_500 })
          : caller.call('svc.rtpg.tx', { sleep_s: 0 }, ctx(), { timeoutMs: 1_500 }),
      ),
    );
    const results = await Promise.all(calls);
    for (const r of results) {
      // Answered by the actor (503) before the caller's own deadline (which would be a 504 with the handler still stuck).
      expect(r.code).toBe('unavailable');
      expect(r.ms).toBeLessThan(1_500);
    }
    // Still frozen, and no handler is left holding a connection.
    expect(running).toBe(0);

    proxy.thaw();
    const after = await Promise.all(
      Array.from({ length: 2 * POOL_MAX }, () =>
        outcome(caller.call('svc.rtpg.tx', { sleep_s: 0 }, ctx(), { timeoutMs: 3_000 })),
      ),
    );
    expect(after.map((r) => r.code)).toEqual(Array(2 * POOL_MAX).fill('ok'));
    // Nothing left checked out or waiting: the connections stuck on the frozen server were cut and discarded.
    // Generous: on a loaded 2-core machine the cut sockets' close events can take a few seconds to arrive.
    await waitFor(
      () => pool.waitingCount === 0 && pool.totalCount === pool.idleCount,
      15_000,
      'the pool to settle',
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}: total ${pool.totalCount} idle ${pool.idleCount} waiting ${pool.waitingCount}`);
    });
    expect(pool.totalCount).toBeLessThanOrEqual(POOL_MAX);

    // Item 11: one warning when it went down, one when it came back; no error-level line, no stack.
    const warn = lines.filter((l) => l.level === 40).map((l) => l.msg);
    expect(warn.filter((m) => m === 'backing store unavailable')).toHaveLength(1);
    expect(warn.filter((m) => m === 'backing store available again')).toHaveLength(1);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('has a slow statement cancelled by the server at the deadline (504), leaving nothing running', async () => {
    const r = await outcome(caller.call('svc.rtpg.tx', { sleep_s: 5 }, ctx(), { timeoutMs: 1_000 }));
    expect(r.code).toBe('timeout');
    expect(r.ms).toBeLessThan(1_300);
    const running = await direct.em
      .fork()
      .execute<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ? AND state = 'active' AND query LIKE '%pg_sleep%'`,
        [appName],
      );
    expect(running[0]?.n).toBe(0);
    await expect(caller.call('svc.rtpg.tx', { sleep_s: 0 }, ctx())).resolves.toEqual({ n: 1 });
  });

  it('bounds the wait for a pooled connection by the deadline', async () => {
    // Every pooled connection busy for 2 s; a request with 600 ms left must not wait for one beyond that.
    const busy = Array.from({ length: POOL_MAX }, () =>
      outcome(caller.call('svc.rtpg.tx', { sleep_s: 2 }, ctx(), { timeoutMs: 5_000 })),
    );
    await waitFor(() => pool.totalCount - pool.idleCount === POOL_MAX, 2_000, 'the pool to be busy');
    const waiting = await outcome(caller.call('svc.rtpg.read', {}, ctx(), { timeoutMs: 600 }));
    expect(waiting.code).toBe('unavailable');
    expect(waiting.ms).toBeLessThan(600);
    expect((await Promise.all(busy)).map((r) => r.code)).toEqual(Array(POOL_MAX).fill('ok'));
  });
});
