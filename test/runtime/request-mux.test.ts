import { NoRespondersError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { ConnectionGoneError, RequestMux } from '../../platform/request-mux.ts';
import { sleep } from '../support/processes.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';

/** The callers' request-reply (call.ts) over the real authenticated broker. */
const log = createLogger('silent');
const enc = new TextEncoder();
const dec = new TextDecoder();
let responder: NatsConnection;
let requester: NatsConnection;
const subject = `svc.muxtest.${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  responder = await connectNats(NATS_URL, 'mux-responder', log, NATS_CREDS, NATS_CA);
  requester = await connectNats(NATS_URL, 'mux-requester', log, NATS_CREDS, NATS_CA);
  // Echoes after the delay the request asks for.
  responder.subscribe(`${subject}.echo`, {
    callback: (_e, m) => {
      const { ms, n } = JSON.parse(dec.decode(m.data)) as { ms: number; n: number };
      setTimeout(() => m.respond(enc.encode(String(n))), ms);
    },
  });
  await responder.flush();
});

afterAll(async () => {
  await responder.drain();
  if (!requester.isClosed()) await requester.drain();
});

describe('RequestMux', () => {
  it('gives each of many concurrent requests its own reply, answered out of order', async () => {
    const mux = RequestMux.of(requester);
    expect(RequestMux.of(requester)).toBe(mux);
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        mux.request(`${subject}.echo`, enc.encode(JSON.stringify({ ms: (n * 7) % 20, n })), { timeout: 5000 }),
      ),
    );
    expect(replies.map((r) => Number(dec.decode(r)))).toEqual(Array.from({ length: 200 }, (_, n) => n));
  });

  it('times out, and drops the reply that comes later without disturbing the next request', async () => {
    const mux = RequestMux.of(requester);
    await expect(
      mux.request(`${subject}.echo`, enc.encode(JSON.stringify({ ms: 300, n: 1 })), { timeout: 50 }),
    ).rejects.toBeInstanceOf(TimeoutError);
    await sleep(350);
    expect(
      dec.decode(await mux.request(`${subject}.echo`, enc.encode(JSON.stringify({ ms: 0, n: 2 })), { timeout: 2000 })),
    ).toBe('2');
  });

  it('says at once when nobody serves the subject', async () => {
    const started = Date.now();
    await expect(
      RequestMux.of(requester).request(`${subject}.nobody`, enc.encode('{}'), { timeout: 5000 }),
    ).rejects.toBeInstanceOf(NoRespondersError);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('fails requests still waiting when the connection closes, without waiting for their timeouts', async () => {
    const nc = await connectNats(NATS_URL, 'mux-closing', log, NATS_CREDS, NATS_CA);
    const waiting = RequestMux.of(nc).request(`${subject}.echo`, enc.encode(JSON.stringify({ ms: 2000, n: 3 })), {
      timeout: 10_000,
    });
    await nc.flush();
    const started = Date.now();
    await nc.close();
    await expect(waiting).rejects.toBeInstanceOf(ConnectionGoneError);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
