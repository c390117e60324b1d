import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lease } from '../../platform/lease.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';
import { sleep, waitFor } from '../support/processes.ts';

const log = createLogger('silent');
let a: NatsConnection;
let b: NatsConnection;

beforeAll(async () => {
  a = await connectNats(NATS_URL, 'lease-a', log, NATS_CREDS, NATS_CA);
  b = await connectNats(NATS_URL, 'lease-b', log, NATS_CREDS, NATS_CA);
});
afterAll(async () => {
  await a?.drain();
  await b?.drain();
});

describe('a lease in JetStream KV', () => {
  it('has one holder at a time; a released lease passes on at once, an abandoned one after its TTL', async () => {
    const name = `test-${randomUUID()}`;
    const first = new Lease(a, name, 1500, log);
    const second = new Lease(b, name, 1500, log);
    const both = await Promise.all([first.hold(), second.hold()]);
    expect(both.filter(Boolean)).toHaveLength(1);
    const [holder, other] = both[0] ? [first, second] : [second, first];
    // Renewing keeps it; the other keeps failing.
    expect(await holder.hold()).toBe(true);
    expect(await other.hold()).toBe(false);
    await holder.release();
    expect(await other.hold()).toBe(true);
    expect(await holder.hold()).toBe(false);
    // The new holder dies (stops renewing): the key expires and the first takes over.
    // Once its TTL (1.5 s) has passed: the server's removal of the key, under load, can take a moment more.
    await sleep(1_500);
    await waitFor(() => holder.hold(), 5_000, 'the first to take over');
    // The old holder's renewal now fails: it lost the lease and knows it.
    expect(await other.hold()).toBe(false);
  });
});
