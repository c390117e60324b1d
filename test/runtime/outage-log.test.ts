import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Caller } from '../../platform/call.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testSigner } from '../support/env.ts';
import { capturingLogger, type LogLine } from '../support/log-capture.ts';

/** A store outage is logged once per transition at warn; real faults stay at error with a stack. */

interface Line extends LogLine {
  store?: string;
  err?: { stack?: string };
}
const { log, lines } = capturingLogger<Line>('info');

let nc: NatsConnection;
let host: ActorHost<TestCat>;
let caller: Caller<TestCat>;
let storeDown = true;
const ctx = () => anonymousContext(randomUUID());

beforeAll(async () => {
  nc = await connectNats(NATS_URL, 'outage-log-test', log, NATS_CREDS, NATS_CA);
  host = new ActorHost(nc, testCatalogue, testSigner(), log);
  await host.serve('rtest', 'rtest-outage', {
    'svc.rtest.storedown': async () => {
      if (storeDown)
        throw new Error('query failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
            code: 'ECONNREFUSED',
            address: '127.0.0.1',
            port: 5432,
          }),
        });
      return {};
    },
    'svc.rtest.crash': async () => {
      throw new Error('boom');
    },
  });
  caller = new Caller(() => nc, testCatalogue, testSigner(), 2_000);
});

afterAll(async () => {
  await host.drain(100);
  await nc.drain();
});

describe('outage logging', () => {
  it('logs one warning when a store goes down and one when it is back, whatever the number of requests', async () => {
    lines.length = 0;
    for (let i = 0; i < 5; i++)
      await expect(caller.call('svc.rtest.storedown', {}, ctx())).rejects.toMatchObject({ code: 'unavailable' });
    storeDown = false;
    for (let i = 0; i < 3; i++) await caller.call('svc.rtest.storedown', {}, ctx());
    storeDown = true;
    await expect(caller.call('svc.rtest.storedown', {}, ctx())).rejects.toMatchObject({ code: 'unavailable' });
    const handlerLines = lines.filter((l) => l.level >= 40);
    expect(handlerLines.map((l) => [l.level, l.msg, l.store])).toEqual([
      [40, 'backing store unavailable', '127.0.0.1:5432'],
      [40, 'backing store available again', '127.0.0.1:5432'],
      [40, 'backing store unavailable', '127.0.0.1:5432'],
    ]);
    expect(handlerLines.some((l) => l.err?.stack)).toBe(false);
  });

  it('keeps error level, with the stack, for a real fault', async () => {
    lines.length = 0;
    await expect(caller.call('svc.rtest.crash', {}, ctx())).rejects.toMatchObject({ code: 'internal_error' });
    const errors = lines.filter((l) => l.level === 50);
    expect(errors.map((l) => l.msg)).toEqual(['handler failed']);
    expect(errors[0]?.err?.stack).toMatch(/boom/);
  });
});
