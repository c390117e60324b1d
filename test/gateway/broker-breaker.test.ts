import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { LazyNats } from '../../platform/nats.ts';
import { DomainError } from '../../contracts/errors.ts';
import { BrokerBreaker, type PingResult } from '../../gateway/shared/broker-breaker.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';
import { createUser, tokenFor } from '../support/identity.ts';
import { freePort, startNatsServer, stopProcess, waitFor } from '../support/processes.ts';
import { errorOf, startTestSystem, type TestSystem } from '../support/system.ts';

/** A health check the test answers by hand: each ping waits until the test settles it. */
function handPing(): {
  ping: (timeoutMs: number) => Promise<PingResult>;
  pings: number;
  answer: (ok: PingResult) => void;
} {
  const pending: ((ok: PingResult) => void)[] = [];
  const hand = {
    pings: 0,
    ping: (): Promise<PingResult> => {
      hand.pings++;
      return new Promise<PingResult>((resolve) => pending.push(resolve));
    },
    answer: (ok: PingResult): void => {
      for (const resolve of pending.splice(0)) resolve(ok);
    },
  };
  return hand;
}

describe('the broker breaker', () => {
  it('opens on an unanswered health check and refuses with 503 naming the broker and a Retry-After', async () => {
    const hand = handPing();
    const breaker = new BrokerBreaker(hand.ping, { intervalMs: 1000, pingTimeoutMs: 1500 });
    expect(breaker.state).toBe('closed');
    expect(breaker.refusal()).toBeUndefined();
    const checked = breaker.check();
    hand.answer(false);
    expect(await checked).toBe(false);
    expect(breaker.state).toBe('open');
    const refused = breaker.refusal();
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ code: 'unavailable', details: { retry_after_seconds: 3 } });
    expect(refused!.message).toMatch(/message broker is not answering/);
  });

  it('half-open: requests never probe; one shared health check decides, and it closes only when answered', async () => {
    const hand = handPing();
    const breaker = new BrokerBreaker(hand.ping);
    const first = breaker.check();
    hand.answer(false);
    await first;
    // Refusing requests costs no ping: only the health check probes.
    for (let i = 0; i < 5; i++) expect(breaker.refusal()).toBeDefined();
    expect(hand.pings).toBe(1);

    // The probe: whoever asks meanwhile (the timer, /readyz) shares it, and requests are still refused.
    const probe = breaker.check();
    const readyz = breaker.check();
    expect(hand.pings).toBe(2);
    expect(breaker.state).toBe('half_open');
    expect(breaker.refusal()).toBeDefined();
    hand.answer(false);
    expect(await probe).toBe(false);
    expect(await readyz).toBe(false);
    expect(breaker.state).toBe('open');

    const again = breaker.check();
    hand.answer(true);
    expect(await again).toBe(true);
    expect(breaker.state).toBe('closed');
    expect(breaker.refusal()).toBeUndefined();
  });

  it('holds its state while the client is between connections (a cluster failover is not a silent broker)', async () => {
    const hand = handPing();
    const breaker = new BrokerBreaker(hand.ping);
    // Closed and reconnecting: requests keep going (the client buffers them until it is connected again).
    const during = breaker.check();
    hand.answer('reconnecting');
    expect(await during).toBe(false);
    expect(breaker.state).toBe('closed');
    expect(breaker.refusal()).toBeUndefined();
    // Open (a frozen broker) and then reconnecting: still open until a ping is answered.
    const frozen = breaker.check();
    hand.answer(false);
    await frozen;
    const away = breaker.check();
    hand.answer('reconnecting');
    expect(await away).toBe(false);
    expect(breaker.state).toBe('open');
    expect(breaker.refusal()).toBeDefined();
    const back = breaker.check();
    hand.answer(true);
    expect(await back).toBe(true);
    expect(breaker.state).toBe('closed');
  });

  it('runs the health check by itself once started: opens while pings fail, closes when they answer', async () => {
    let answering = true;
    const breaker = new BrokerBreaker(async () => answering, { intervalMs: 20 }).start();
    try {
      await waitFor(() => breaker.state === 'closed', 5_000, 'first check');
      answering = false;
      await waitFor(() => breaker.state === 'open', 5_000, 'breaker open');
      answering = true;
      await waitFor(() => breaker.state === 'closed', 5_000, 'breaker closed');
    } finally {
      breaker.stop();
    }
  });

  it('a stalled gateway is not a silent broker: a PONG that arrived during the stall counts', async () => {
    const nats = new LazyNats(NATS_URL, 'breaker-stall', createLogger('silent'), NATS_CREDS, NATS_CA);
    try {
      await nats.ready;
      const healthy = nats.healthy(300);
      // The PING is on the wire first: a connection's writes go out once per event-loop turn (setImmediate), and a
      // stall that begins before that would hold the PING itself, so no PONG could have arrived during it.
      await new Promise((r) => setImmediate(r));
      // A synchronous task holds the event loop past the ping's bound; the broker answered meanwhile.
      const until = Date.now() + 1000;
      while (Date.now() < until) {
        /* busy: what a long synchronous job does to a gateway */
      }
      expect(await healthy).toBe(true);
    } finally {
      await nats.close();
    }
  });
});

describe('a frozen broker (nats-server stopped with SIGSTOP, sockets open)', () => {
  let port: number;
  let storeDir: string;
  let server: ChildProcess | undefined;
  let sys: TestSystem | undefined;
  let token: string;
  const DEADLINE_MS = 10_000;
  beforeAll(async () => {
    port = await freePort();
    storeDir = await mkdtemp(join(tmpdir(), 'breaker-nats-'));
    server = startNatsServer(port, storeDir);
    sys = await startTestSystem({
      SVC_NATS_URL: `nats://127.0.0.1:${port}`,
      SVC_REQUEST_TIMEOUT_MS: String(DEADLINE_MS),
    });
    token = await tokenFor(sys, await createUser(sys));
  });
  afterAll(async () => {
    // A stopped server would hold the system's drain; never leave it stopped.
    server?.kill('SIGCONT');
    await sys?.stop();
    await stopProcess(server);
    await rm(storeDir, { recursive: true, force: true });
  });

  const me = (): ReturnType<TestSystem['http']> => sys!.http({ method: 'GET', url: '/api/v1/auth/me', token });
  const invoices = (): ReturnType<TestSystem['invoicingHttp']> =>
    sys!.invoicingHttp({ method: 'GET', url: '/api/v1/invoices', token });

  it(
    'API requests get 503 at once while it is stopped, and are served again once it continues',
    { timeout: 120_000 },
    async () => {
      expect((await me()).statusCode).toBe(200);
      server!.kill('SIGSTOP');
      try {
        await waitFor(
          async () => (await sys!.http({ method: 'GET', url: '/readyz' })).statusCode === 503,
          20_000,
          '/readyz 503 while the broker is stopped',
          100,
        );
        for (const [name, request, code] of [
          ['console', me, 'service_unavailable'],
          ['invoicing', invoices, 'SERVICE_UNAVAILABLE'],
        ] as const) {
          const t0 = Date.now();
          const res = await request();
          const took = Date.now() - t0;
          expect(res.statusCode, `${name}: ${res.body}`).toBe(503);
          // Far below the 10 s deadline a call to the frozen broker would wait for its 504.
          expect(took, name).toBeLessThan(2_000);
          expect(errorOf(res)).toMatchObject({
            code,
            message: expect.stringMatching(/message broker is not answering/),
          });
          expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        }
        // Liveness needs no broker.
        const t0 = Date.now();
        expect((await sys!.http({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
        expect(Date.now() - t0).toBeLessThan(2_000);
      } finally {
        server!.kill('SIGCONT');
      }
      await waitFor(async () => (await me()).statusCode === 200, 30_000, 'served again after SIGCONT', 100);
      expect((await sys!.http({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      const res = await invoices();
      expect(res.statusCode, res.body).not.toBe(503);
      expect(res.statusCode, res.body).toBeLessThan(500);
    },
  );
});
