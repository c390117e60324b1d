import { jetstream, jetstreamManager, type JetStreamManager, type JsMsg, type StoredMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ensureConsumer,
  ensureStreams,
  NonRetryableError,
  publishDurable,
  publishEvent,
  runConsumer,
  type ConsumerHandle,
  type RunConsumerOptions,
} from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import {
  agentOfTelemetrySubject,
  allStreams,
  DlqHeaders,
  dlqSubjectFor,
  streams,
  StreamSpec,
  telemetryFilter,
  telemetrySubject,
} from '../../contracts/streams.ts';
import { setNamespace } from '../../platform/namespace.ts';
import { sleep, waitFor, freePort, startNatsServer, stopProcess } from '../support/processes.ts';
import { NATS_ADMIN_CREDS, NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';

// These tests address raw stream subjects and consumers (already unique per run), so no namespace is applied.
setNamespace('');

const log = createLogger(process.env.SVC_LOG_LEVEL ?? 'silent');
const NATS = NATS_URL;
// Everything this run creates carries this suffix, so runs (and other engineers' suites) never see each other's data.
const RAND = randomBytes(4).toString('hex');
const WORK = 'SVC_WORK';

let nc: NatsConnection;
let jsm: JetStreamManager;
const handles: ConsumerHandle[] = [];
const durables = new Set<string>();

const subj = (name: string): string => `svc.work.test.${RAND}.${name}`;
const durableOf = (name: string): string => {
  const d = `test_${RAND}_${name}`;
  durables.add(d);
  return d;
};

const Job = z.object({ n: z.number().int() });
type Job = z.infer<typeof Job>;

async function start(
  name: string,
  opts: Partial<RunConsumerOptions<Job>> & Pick<RunConsumerOptions<Job>, 'handler'>,
): Promise<ConsumerHandle> {
  const h = await runConsumer<Job>({
    nc,
    stream: WORK,
    durable: durableOf(name),
    filterSubjects: [subj(name)],
    schema: Job,
    backoffMs: [50],
    ackWaitMs: 5_000,
    log,
    ...opts,
  });
  handles.push(h);
  return h;
}

const dlqOf = (durable: string): Promise<StoredMsg | null> =>
  jsm.streams.getMessage('SVC_DLQ', { last_by_subj: dlqSubjectFor(durable) });

/** Every dead letter of `durable`, oldest first, read with an ordered (ephemeral) consumer. */
async function dlqAll(durable: string, expected: number): Promise<JsMsg[]> {
  const c = await jetstream(nc).consumers.get('SVC_DLQ', { filter_subjects: dlqSubjectFor(durable) });
  const out: JsMsg[] = [];
  const batch = await c.fetch({ max_messages: expected, expires: 2_000 });
  for await (const m of batch) out.push(m);
  await c.delete().catch(() => undefined);
  return out;
}

async function dlqCount(durable: string): Promise<number> {
  const subject = dlqSubjectFor(durable);
  const info = await jsm.streams.info('SVC_DLQ', { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function workCount(subject: string): Promise<number> {
  const info = await jsm.streams.info(WORK, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function consumerState(durable: string): Promise<{ pending: number; ackPending: number; redelivered: number }> {
  const ci = await jsm.consumers.info(WORK, durable);
  return { pending: ci.num_pending, ackPending: ci.num_ack_pending, redelivered: ci.num_redelivered };
}

beforeAll(async () => {
  nc = await connectNats(NATS, 'jetstream-test', log, NATS_ADMIN_CREDS, NATS_CA);
  await ensureStreams(nc, allStreams);
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  await Promise.allSettled(handles.map((h) => h.stop()));
  for (const d of durables) {
    await jsm.consumers.delete(WORK, d).catch(() => undefined);
    await jsm.streams.purge('SVC_DLQ', { filter: dlqSubjectFor(d) }).catch(() => undefined);
  }
  await jsm.streams.purge(WORK, { filter: `svc.work.test.${RAND}.>` }).catch(() => undefined);
  await nc.drain();
});

describe('contracts/streams', () => {
  it('builds dead-letter and telemetry subjects from single tokens only', () => {
    expect(dlqSubjectFor('email_sender')).toBe('svc.dlq.email_sender');
    expect(() => dlqSubjectFor('a.b')).toThrow();
    expect(() => dlqSubjectFor('a>')).toThrow();
    expect(telemetrySubject('agent-1', 'metrics')).toBe('svc.agent.agent-1.metrics');
    expect(() => telemetrySubject('a.b', 'metrics')).toThrow();
    expect(telemetryFilter('heartbeat')).toBe('svc.agent.*.heartbeat');
    expect(agentOfTelemetrySubject(telemetrySubject('agent-1', 'metrics'))).toBe('agent-1');
    for (const other of ['svc.agent.a.b.c', 'svc.fleet.hosts.get', 'ns.svc.agent.a.b', 'svc.agent..b'])
      expect(agentOfTelemetrySubject(other)).toBeUndefined();
  });

  it('declares the five streams with the intended retention', () => {
    expect(Object.keys(streams).sort()).toEqual(['SVC_DLQ', 'SVC_EVENTS', 'SVC_TELEMETRY', 'SVC_UPLOADS', 'SVC_WORK']);
    expect(streams.SVC_UPLOADS.subjects).toEqual(['svc.upload.>']);
    expect(streams.SVC_WORK.retention).toBe('workqueue');
    expect(streams.SVC_EVENTS.maxAgeMs).toBe(30 * 86_400_000);
    expect(streams.SVC_TELEMETRY.subjects).toEqual(['svc.agent.*.*']);
  });
});

describe('ensureStreams', () => {
  it('is idempotent, also when two processes race', async () => {
    const before = await jsm.streams.info('SVC_EVENTS');
    const [a, b] = await Promise.all([ensureStreams(nc, allStreams), ensureStreams(nc, allStreams)]);
    const again = await ensureStreams(nc, allStreams);
    for (const infos of [a, b, again]) expect(infos.map((i) => i.config.name)).toEqual(allStreams.map((s) => s.name));
    const after = await jsm.streams.info('SVC_EVENTS');
    expect(after.created).toBe(before.created);
    expect(after.config.subjects).toEqual(['svc.evt.>']);
    expect(after.config.duplicate_window).toBe(120_000_000_000);
    const work = await jsm.streams.info(WORK);
    expect(work.config.retention).toBe('workqueue');
    const telemetry = await jsm.streams.info('SVC_TELEMETRY');
    expect(telemetry.config.max_age).toBe(7 * 86_400 * 1e9);
  });

  it('updates an existing stream to the declared limits without losing data, and refuses a retention change', async () => {
    const name = `TEST_${RAND.toUpperCase()}`;
    const spec = StreamSpec.parse({
      name,
      description: 'test',
      subjects: [`svc.streamtest.${RAND}.>`],
      retention: 'limits',
      maxAgeMs: 60_000,
      duplicateWindowMs: 1_000,
    });
    try {
      await ensureStreams(nc, [spec]);
      await jetstream(nc).publish(`svc.streamtest.${RAND}.a`, 'kept');
      const [updated] = await ensureStreams(nc, [{ ...spec, maxAgeMs: 120_000 }]);
      expect(updated?.config.max_age).toBe(120_000_000_000);
      expect(updated?.state.messages).toBe(1);
      await expect(ensureStreams(nc, [{ ...spec, retention: 'workqueue' }])).rejects.toThrow(/retention/);
      expect((await jsm.streams.info(name)).state.messages).toBe(1);
    } finally {
      await jsm.streams.delete(name).catch(() => undefined);
    }
  });
});

describe('ensureConsumer', () => {
  it('creates a durable pull consumer with explicit ack, and updates it in place', async () => {
    const durable = durableOf('ensure');
    const first = await ensureConsumer(nc, WORK, {
      durable,
      maxDeliver: 4,
      ackWaitMs: 2_000,
      filterSubjects: [subj('ensure')],
    });
    expect(first.config.ack_policy).toBe('explicit');
    expect(first.config.max_deliver).toBe(4);
    expect(first.config.filter_subject).toBe(subj('ensure'));
    const same = await ensureConsumer(nc, WORK, {
      durable,
      maxDeliver: 4,
      ackWaitMs: 2_000,
      filterSubjects: [subj('ensure')],
    });
    expect(same.created).toBe(first.created);
    const changed = await ensureConsumer(nc, WORK, {
      durable,
      maxDeliver: 7,
      ackWaitMs: 3_000,
      filterSubjects: [subj('ensure')],
    });
    expect(changed.created).toBe(first.created);
    expect(changed.config.max_deliver).toBe(7);
    expect(changed.config.ack_wait).toBe(3_000_000_000);
  });
});

describe('publishDurable', () => {
  // A subject no stream of the system covers: until the test makes one, JetStream has no responder for it, as it has
  // none for a stream whose leader was lost and is not yet replaced.
  const lateSubject = `svc.late.${RAND}.x`;
  const lateStream = `TEST_LATE_${RAND}`;

  it('waits for a stream that cannot take the message yet, and stores it once', async () => {
    const t0 = Date.now();
    const published = publishDurable(nc, lateSubject, { n: 1 }, { retryForMs: 20_000 });
    await sleep(1_500);
    await jsm.streams.add({ name: lateStream, subjects: [`svc.late.${RAND}.>`] });
    try {
      const ack = await published;
      expect(ack.stream).toBe(lateStream);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1_500);
      expect((await jsm.streams.info(lateStream)).state.messages).toBe(1);
    } finally {
      await jsm.streams.delete(lateStream);
    }
  });

  it('gives up when its budget is spent, with the last error', async () => {
    const t0 = Date.now();
    await expect(publishDurable(nc, lateSubject, { n: 2 }, { retryForMs: 400 })).rejects.toMatchObject({
      name: 'JetStreamNotEnabled',
    });
    const took = Date.now() - t0;
    // It retried: with jitter its pauses are at least 25 + 50 + 100 ms before one no longer fits the 400 ms budget.
    expect(took).toBeGreaterThanOrEqual(150);
    expect(took).toBeLessThan(5_000);
  });
});

describe('runConsumer', () => {
  it('redelivers a failing message with backoff, dead-letters it after maxDeliver, and never delivers it again', async () => {
    const deliveries: { count: number; at: number }[] = [];
    const durable = durableOf('fail');
    await start('fail', {
      maxDeliver: 3,
      backoffMs: [100, 300],
      handler: async (_job, meta) => {
        deliveries.push({ count: meta.deliveryCount, at: Date.now() });
        throw new Error(`boom #${meta.deliveryCount}\nsecond line`);
      },
    });
    await publishDurable(
      nc,
      subj('fail'),
      { n: 1 },
      { msgId: `${RAND}-fail-1`, headers: { 'Svc-Request-Id': 'req-1' } },
    );

    await waitFor(async () => (await dlqOf(durable)) !== null, 5_000, 'dead letter');
    const dead = (await dlqOf(durable))!;
    expect(deliveries.map((d) => d.count)).toEqual([1, 2, 3]);
    // nak delays follow backoffMs: 100 ms after the 1st failure, 300 ms after the 2nd.
    expect(deliveries[1]!.at - deliveries[0]!.at).toBeGreaterThanOrEqual(90);
    expect(deliveries[2]!.at - deliveries[1]!.at).toBeGreaterThanOrEqual(280);
    expect(JSON.parse(dead.string())).toEqual({ n: 1 });
    expect(dead.header.get(DlqHeaders.subject)).toBe(subj('fail'));
    expect(dead.header.get(DlqHeaders.error)).toBe('boom #3 second line');
    expect(dead.header.get(DlqHeaders.reason)).toBe('failed');
    expect(dead.header.get(DlqHeaders.deliveryCount)).toBe('3');
    expect(dead.header.get(DlqHeaders.msgId)).toBe(`${RAND}-fail-1`);
    expect(dead.header.get(DlqHeaders.durable)).toBe(durable);
    expect(dead.header.get('Svc-Request-Id')).toBe('req-1');

    await sleep(800);
    expect(deliveries).toHaveLength(3);
    expect(await dlqCount(durable)).toBe(1);
    expect(await consumerState(durable)).toMatchObject({ pending: 0, ackPending: 0 });
    // term() on a work queue removes the message from the stream.
    expect(await workCount(subj('fail'))).toBe(0);
  });

  it('acks a message whose handler succeeds on the second try, without dead-lettering it', async () => {
    const seen: number[] = [];
    const durable = durableOf('retry');
    await start('retry', {
      maxDeliver: 3,
      handler: async (job, meta) => {
        seen.push(meta.deliveryCount);
        if (meta.deliveryCount === 1) throw new Error('transient');
        expect(job).toEqual({ n: 2 });
      },
    });
    await publishDurable(nc, subj('retry'), { n: 2 });
    await waitFor(() => seen.length >= 2, 5_000, 'second delivery');
    await waitFor(async () => (await workCount(subj('retry'))) === 0, 5_000, 'ack removing the job');
    await sleep(300);
    expect(seen).toEqual([1, 2]);
    expect(await dlqOf(durable)).toBeNull();
    expect(await consumerState(durable)).toMatchObject({ pending: 0, ackPending: 0 });
  });

  it('dead-letters a malformed payload at once, without calling the handler', async () => {
    let calls = 0;
    const durable = durableOf('malformed');
    await start('malformed', {
      handler: async () => {
        calls++;
      },
    });
    await publishDurable(nc, subj('malformed'), { n: 'not a number' });
    await jetstream(nc).publish(subj('malformed'), 'not json {');
    await waitFor(async () => (await dlqCount(durable)) === 2, 5_000, 'two dead letters');
    const last = (await dlqOf(durable))!;
    expect(last.header.get(DlqHeaders.reason)).toBe('malformed');
    expect(last.header.get(DlqHeaders.deliveryCount)).toBe('1');
    expect(last.header.get(DlqHeaders.error)).toBe('payload is not JSON');
    const all = await dlqAll(durable, 2);
    expect(all.map((m) => m.headers?.get(DlqHeaders.error))).toEqual([
      expect.stringMatching(/^n: /),
      'payload is not JSON',
    ]);
    await sleep(300);
    expect(calls).toBe(0);
    expect(await workCount(subj('malformed'))).toBe(0);
  });

  it('dead-letters as malformed what its decode hook refuses, and a schema transform that throws, with their messages', async () => {
    let calls = 0;
    const durable = durableOf('decode');
    await start('decode', {
      decode: (data, subject) => {
        if (data[0] === 0x00) throw new Error(`binary from ${subject.split('.').pop()} refused`);
        return JSON.parse(new TextDecoder().decode(data)) as unknown;
      },
      schema: z.unknown().transform((v): Job => {
        if ((v as { boom?: boolean }).boom) throw new Error('transform blew up');
        return Job.parse(v);
      }),
      handler: async () => {
        calls++;
      },
    });
    await jetstream(nc).publish(subj('decode'), Uint8Array.of(0, 1, 2));
    await publishDurable(nc, subj('decode'), { boom: true } as unknown as Job);
    await publishDurable(nc, subj('decode'), { n: 1 });
    await waitFor(
      async () => (await dlqCount(durable)) === 2 && calls === 1,
      5_000,
      'two dead letters and one handled',
    );
    const all = await dlqAll(durable, 2);
    expect(all.map((m) => [m.headers?.get(DlqHeaders.reason), m.headers?.get(DlqHeaders.error)])).toEqual([
      ['malformed', 'binary from decode refused'],
      ['malformed', 'transform blew up'],
    ]);
    expect(await workCount(subj('decode'))).toBe(0);
  });

  it('dead-letters at once when the handler throws NonRetryableError', async () => {
    const seen: number[] = [];
    const durable = durableOf('reject');
    await start('reject', {
      handler: async (_job, meta) => {
        seen.push(meta.deliveryCount);
        throw new NonRetryableError('address rejected');
      },
    });
    await publishDurable(nc, subj('reject'), { n: 3 });
    await waitFor(async () => (await dlqOf(durable)) !== null, 5_000, 'dead letter');
    const dead = (await dlqOf(durable))!;
    expect(dead.header.get(DlqHeaders.reason)).toBe('rejected');
    expect(dead.header.get(DlqHeaders.error)).toBe('address rejected');
    await sleep(300);
    expect(seen).toEqual([1]);
  });

  it('hands onDeadLetter the payload of a message whose handler gave up after waiting', async () => {
    const told: { payload: Job | undefined; reason: string; error: string }[] = [];
    await start('told', {
      handler: async () => {
        // The handler waits before it fails: the payload must still be there for onDeadLetter afterwards.
        await sleep(50);
        throw new NonRetryableError('gave up');
      },
      onDeadLetter: async ({ payload, reason, error }) => {
        told.push({ payload, reason, error });
      },
    });
    await publishDurable(nc, subj('told'), { n: 7 });
    await waitFor(async () => told.length === 1, 5_000, 'onDeadLetter called');
    expect(told).toEqual([{ payload: { n: 7 }, reason: 'rejected', error: 'gave up' }]);
  });

  it('tries a failing onDeadLetter again with the message kept from redelivery, then terms it: one handler run, one dead letter', async () => {
    const name = 'told-again';
    const durable = durableOf(name);
    const told: { payload: Job | undefined; reason: string; error: string }[] = [];
    let calls = 0;
    await start(name, {
      // The tries outlast ack_wait: the message must be kept alive meanwhile, not redelivered.
      ackWaitMs: 1_200,
      handler: async () => {
        calls++;
        throw new NonRetryableError('refused by the peer');
      },
      onDeadLetter: async ({ payload, reason, error }) => {
        told.push({ payload, reason, error });
        // Its store is slow and down twice, then back.
        if (told.length === 1) await sleep(1_500);
        if (told.length < 3) throw new Error('store unavailable');
      },
    });
    await publishDurable(nc, subj(name), { n: 8 });
    await waitFor(
      async () => told.length === 3 && (await workCount(subj(name))) === 0,
      15_000,
      'onDeadLetter told three times and the message termed',
    );
    await sleep(300);
    expect(told).toEqual(
      Array.from({ length: 3 }, () => ({ payload: { n: 8 }, reason: 'rejected', error: 'refused by the peer' })),
    );
    expect(calls).toBe(1);
    expect(await dlqCount(durable)).toBe(1);
    expect(await consumerState(durable)).toMatchObject({ pending: 0, ackPending: 0, redelivered: 0 });
  });

  it('stops trying onDeadLetter when the consumer stops, and terms the message: the dead letter stays for replay', async () => {
    const name = 'told-stopped';
    const durable = durableOf(name);
    let told = 0;
    const h = await start(name, {
      handler: async () => {
        throw new NonRetryableError('refused');
      },
      onDeadLetter: async () => {
        told++;
        throw new Error('store unavailable');
      },
    });
    await publishDurable(nc, subj(name), { n: 9 });
    await waitFor(() => told >= 2, 10_000, 'onDeadLetter tried twice');
    const stopping = Date.now();
    await h.stop();
    // Its next try was seconds away: the stop cut the pause short.
    expect(Date.now() - stopping).toBeLessThan(2_500);
    expect(told).toBeLessThanOrEqual(3);
    await waitFor(async () => (await workCount(subj(name))) === 0, 5_000, 'the message termed');
    expect(await dlqCount(durable)).toBe(1);
  });

  it('dead-letters a message whose earlier deliveries never settled (ack timeouts), without running the handler', async () => {
    const name = 'exhausted';
    const durable = durableOf(name);
    await ensureConsumer(nc, WORK, { durable, maxDeliver: 10, ackWaitMs: 300, filterSubjects: [subj(name)] });
    await publishDurable(nc, subj(name), { n: 4 });
    // Two deliveries that a "crashed" worker never acks: each one times out after ack_wait.
    const raw = await jetstream(nc).consumers.get(WORK, durable);
    for (let i = 1; i <= 2; i++) {
      const m = await raw.next({ expires: 2_000 });
      expect(m?.info.deliveryCount).toBe(i);
    }
    let calls = 0;
    await start(name, {
      maxDeliver: 2,
      ackWaitMs: 300,
      handler: async () => {
        calls++;
      },
    });
    await waitFor(async () => (await dlqOf(durable)) !== null, 5_000, 'dead letter');
    const dead = (await dlqOf(durable))!;
    expect(dead.header.get(DlqHeaders.reason)).toBe('exhausted');
    expect(dead.header.get(DlqHeaders.deliveryCount)).toBe('3');
    expect(calls).toBe(0);
  });

  it('keeps a slow handler alive past ack_wait with working(): delivered once', async () => {
    const seen: number[] = [];
    // Over 2.5 × ack_wait of work, with ack_wait long enough that a loaded machine's pauses cannot outlast it.
    await start('slow', {
      ackWaitMs: 1_200,
      handler: async (_job, meta) => {
        seen.push(meta.deliveryCount);
        await sleep(3_200);
      },
    });
    await publishDurable(nc, subj('slow'), { n: 5 });
    await waitFor(async () => seen.length === 1 && (await workCount(subj('slow'))) === 0, 10_000, 'slow job acked');
    expect(seen).toEqual([1]);
  });

  it('runs up to `concurrency` handlers at once', async () => {
    let running = 0;
    let peak = 0;
    let done = 0;
    await start('concurrent', {
      concurrency: 3,
      handler: async () => {
        running++;
        peak = Math.max(peak, running);
        await sleep(150);
        running--;
        done++;
      },
    });
    for (let n = 0; n < 9; n++) await publishDurable(nc, subj('concurrent'), { n });
    await waitFor(() => done === 9, 10_000, 'all jobs');
    expect(peak).toBe(3);
  });

  it('stop() waits for the in-flight handler, which is acked, and takes nothing more', async () => {
    let started = false;
    let finished = false;
    let abortedAtEnd = false;
    let calls = 0;
    const durable = durableOf('stop');
    const handle = await start('stop', {
      handler: async (_job, meta) => {
        calls++;
        started = true;
        await sleep(400);
        abortedAtEnd = meta.signal.aborted;
        finished = true;
      },
    });
    await publishDurable(nc, subj('stop'), { n: 6 });
    await waitFor(() => started, 5_000, 'handler start');
    const t0 = Date.now();
    await handle.stop();
    expect(finished).toBe(true);
    expect(abortedAtEnd).toBe(true); // the handler could see that a shutdown was under way
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    await nc.flush();
    await waitFor(async () => (await consumerState(durable)).ackPending === 0, 2_000, 'ack recorded');
    expect(await workCount(subj('stop'))).toBe(0);

    await publishDurable(nc, subj('stop'), { n: 7 });
    await sleep(300);
    expect(calls).toBe(1);
    expect(await consumerState(durable)).toMatchObject({ pending: 1 });
    await handle.stop(); // idempotent
  });
});

describe('runConsumer resilience', () => {
  it('redelivers the message of a worker that died mid-handler, and dead-letters it when the bound is reached', async () => {
    const name = 'crash';
    const durable = durableOf(name);
    // The "process" that dies: its own connection, closed from inside the handler, which never settles.
    const doomed = await connectNats(NATS, 'jetstream-crash-test', log, NATS_CREDS, NATS_CA);
    let crashed = false;
    let unblock: () => void = () => undefined;
    await runConsumer<Job>({
      nc: doomed,
      stream: WORK,
      durable,
      filterSubjects: [subj(name)],
      schema: Job,
      maxDeliver: 2,
      ackWaitMs: 500,
      log,
      handler: async () => {
        crashed = true;
        void doomed.close();
        await new Promise<void>((r) => (unblock = r));
      },
    });
    await publishDurable(nc, subj(name), { n: 9 }, { msgId: `${RAND}-crash` });
    await waitFor(() => crashed, 5_000, 'first delivery');

    // A surviving instance gets the message again once ack_wait passes; its handler fails too, on the last delivery.
    const deliveries: number[] = [];
    await start(name, {
      maxDeliver: 2,
      ackWaitMs: 500,
      handler: async (_job, meta) => {
        deliveries.push(meta.deliveryCount);
        throw new Error('still failing');
      },
    });
    await waitFor(async () => (await dlqOf(durable)) !== null, 5_000, 'dead letter');
    expect(deliveries).toEqual([2]);
    const dead = (await dlqOf(durable))!;
    expect(dead.header.get(DlqHeaders.reason)).toBe('failed');
    expect(dead.header.get(DlqHeaders.deliveryCount)).toBe('2');
    expect(JSON.parse(dead.string())).toEqual({ n: 9 });
    // The term follows the dead letter's stored ack (another connection's message): it lands just after.
    await waitFor(async () => (await workCount(subj(name))) === 0, 5_000, 'work message terminated');
    unblock();
  });

  it('recreates its durable when it is deleted under it, and keeps consuming', async () => {
    const seen: number[] = [];
    const durable = durableOf('recreate');
    await start('recreate', {
      handler: async (job) => {
        seen.push(job.n);
      },
    });
    await publishDurable(nc, subj('recreate'), { n: 1 });
    await waitFor(() => seen.length === 1, 5_000, 'first job');
    // Its ack recorded first (the server applies an ack and a delete of the consumer in no set order; a message whose
    // ack was not applied is delivered again, as at-least-once allows).
    await waitFor(async () => (await workCount(subj('recreate'))) === 0, 5_000, 'first job acknowledged');
    await jsm.consumers.delete(WORK, durable);
    await waitFor(
      async () =>
        await jsm.consumers.info(WORK, durable).then(
          () => true,
          () => false,
        ),
      10_000,
      'durable recreated',
    );
    await publishDurable(nc, subj('recreate'), { n: 2 });
    await waitFor(() => seen.length === 2, 10_000, 'job after recreation');
    expect(seen).toEqual([1, 2]);
  });

  it('keeps consuming across a NATS server restart (private server, same store)', async () => {
    const port = await freePort();
    const storeDir = await mkdtemp(join(tmpdir(), 'js-test-'));
    let server = startNatsServer(port, storeDir);
    const pnc = await connectNats(`nats://127.0.0.1:${port}`, 'jetstream-restart-test', log, NATS_CREDS, NATS_CA);
    let handle: ConsumerHandle | undefined;
    try {
      await ensureStreams(pnc, [streams.SVC_WORK, streams.SVC_DLQ]);
      const seen: number[] = [];
      handle = await runConsumer({
        nc: pnc,
        stream: WORK,
        durable: 'restart',
        filterSubjects: ['svc.work.test.restart'],
        schema: Job,
        backoffMs: [50],
        log,
        handler: async (job) => {
          seen.push(job.n);
        },
      });
      await publishDurable(pnc, 'svc.work.test.restart', { n: 1 });
      await waitFor(() => seen.length === 1, 5_000, 'job before restart');

      await stopProcess(server);
      server = startNatsServer(port, storeDir);
      await waitFor(() => !pnc.isClosed() && pnc.info !== undefined, 10_000, 'reconnect');
      // The publish may race the reconnect; a retry with the same msgId cannot store it twice.
      await waitFor(
        () =>
          publishDurable(pnc, 'svc.work.test.restart', { n: 2 }, { msgId: 'after-restart', timeoutMs: 1_000 }).then(
            () => true,
            () => false,
          ),
        15_000,
        'publish after restart',
      );
      await waitFor(() => seen.length === 2, 15_000, 'job after restart');
      expect(seen).toEqual([1, 2]);
    } finally {
      await handle?.stop();
      await pnc.close();
      await stopProcess(server);
      await rm(storeDir, { recursive: true, force: true });
    }
  });
});

describe('publishDurable', () => {
  it('stores a message once when published twice with the same msgId', async () => {
    const subject = subj('dedup');
    const a = await publishDurable(nc, subject, { n: 1 }, { msgId: `${RAND}-dedup` });
    const b = await publishDurable(nc, subject, { n: 1 }, { msgId: `${RAND}-dedup` });
    expect(a.duplicate).toBe(false);
    expect(b.duplicate).toBe(true);
    expect(b.seq).toBe(a.seq);
    expect(await workCount(subject)).toBe(1);
    const c = await publishDurable(nc, subject, { n: 1 }, { msgId: `${RAND}-dedup-2` });
    expect(c.duplicate).toBe(false);
    expect(await workCount(subject)).toBe(2);
  });

  it('parses a typed subject against its catalogue schema before sending', async () => {
    // Invalid, so nothing reaches the shared SVC_WORK/SVC_EVENTS streams.
    await expect(
      publishDurable(nc, 'svc.work.email.send', { to: 'x@example.com', subject: '', text: 't', kind: 'test' }),
    ).rejects.toThrow(/svc\.work\.email\.send: subject/);
    await expect(publishEvent(nc, 'svc.evt.access.invalidated', { user_ids: ['not-a-uuid'] })).rejects.toThrow(
      /invalid payload/,
    );
    // Compile-time: the table's keys type the payload. Each checked call fits on one line, so a formatter cannot move
    // it away from its @ts-expect-error.
    const mail = { to: 'x@example.com', text: 't', kind: 'k' };
    // @ts-expect-error `html` must be a string
    await expect(publishDurable(nc, 'svc.work.email.send', { ...mail, subject: 's', html: 1 })).rejects.toThrow();
    // @ts-expect-error not an event subject
    await expect(publishEvent(nc, 'svc.work.email.send', { ...mail, subject: '' })).rejects.toThrow();
  });
});
