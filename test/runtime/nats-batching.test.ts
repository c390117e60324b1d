import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';

/** batchWrites (nats.ts): one write per event-loop turn, in order, and nothing lost when the connection closes. */
const log = createLogger('silent');
const enc = new TextEncoder();
const dec = new TextDecoder();
const subject = `svc.batchtest.${randomUUID().slice(0, 8)}`;
let reader: NatsConnection;

interface Transport {
  send: (frame: Uint8Array) => void;
}
/** Counts the frames the client hands its socket. */
function countWrites(nc: NatsConnection): { writes: () => number } {
  const transport = (nc as unknown as { protocol: { transport: Transport } }).protocol.transport;
  const send = transport.send.bind(transport);
  let n = 0;
  transport.send = (frame) => {
    n++;
    send(frame);
  };
  return { writes: () => n };
}

/** Subscribes to `s` (confirmed by the server) and resolves with what arrived once `count` came or `ms` passed. */
async function collect(s: string, count: number, ms = 5000): Promise<{ arrived: Promise<string[]> }> {
  const got: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  const arrived = new Promise<string[]>((resolve) => {
    const sub = reader.subscribe(s, {
      callback: (_e, m) => {
        got.push(dec.decode(m.data));
        if (got.length === count) finish();
      },
    });
    const finish = (): void => {
      clearTimeout(timer);
      sub.unsubscribe();
      resolve(got);
    };
    timer = setTimeout(finish, ms);
  });
  await reader.flush();
  return { arrived };
}

beforeAll(async () => {
  reader = await connectNats(NATS_URL, 'batch-reader', log, NATS_CREDS, NATS_CA);
});
afterAll(async () => {
  await reader.drain();
});

describe('batched NATS writes', () => {
  it('sends what separate callbacks of one event-loop turn publish in one write, in order', async () => {
    const nc = await connectNats(NATS_URL, 'batch-writer', log, NATS_CREDS, NATS_CA);
    try {
      await nc.flush();
      const { arrived } = await collect(`${subject}.turn`, 20);
      const counter = countWrites(nc);
      // Twenty timer callbacks due in the same turn: each is its own macrotask, as requests on separate sockets are.
      await new Promise<void>((resolve) => {
        for (let i = 0; i < 20; i++) setTimeout(() => nc.publish(`${subject}.turn`, enc.encode(String(i))), 0);
        setTimeout(resolve, 0);
      });
      await new Promise((r) => setImmediate(r));
      // One write (two when the timers straddle a millisecond and run in two turns); nats.js alone makes twenty.
      expect(counter.writes()).toBeLessThanOrEqual(2);
      expect(await arrived).toEqual(Array.from({ length: 20 }, (_, i) => String(i)));
    } finally {
      await nc.close();
    }
  });

  it('holds a small message to the end of the turn, but writes a full buffer at once', async () => {
    const nc = await connectNats(NATS_URL, 'batch-writer-big', log, NATS_CREDS, NATS_CA);
    try {
      await nc.flush();
      const { arrived } = await collect(`${subject}.big`, 2);
      const counter = countWrites(nc);
      nc.publish(`${subject}.big`, enc.encode('small'));
      await new Promise<void>((r) => queueMicrotask(r));
      expect(counter.writes()).toBe(0);
      // Past the client's 32 KiB threshold the buffer goes without waiting for the turn to end.
      const big = new Uint8Array(40 * 1024).fill(65);
      nc.publish(`${subject}.big`, big);
      await new Promise<void>((r) => queueMicrotask(r));
      expect(counter.writes()).toBe(1);
      expect((await arrived).map((m) => m.length)).toEqual([5, big.length]);
    } finally {
      await nc.close();
    }
  });

  it('loses nothing published just before close() or drain()', async () => {
    for (const end of ['close', 'drain'] as const) {
      const nc = await connectNats(NATS_URL, `batch-${end}`, log, NATS_CREDS, NATS_CA);
      await nc.flush();
      const { arrived } = await collect(`${subject}.${end}`, 5);
      for (let i = 0; i < 5; i++) nc.publish(`${subject}.${end}`, enc.encode(`${end}-${i}`));
      await (end === 'close' ? nc.close() : nc.drain());
      expect(await arrived).toEqual(Array.from({ length: 5 }, (_, i) => `${end}-${i}`));
    }
  });
});
