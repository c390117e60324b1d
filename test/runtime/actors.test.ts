import type { NatsConnection } from '@nats-io/transport-node';
import { Svcm } from '@nats-io/services';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { ActorHost } from '../../platform/serve.ts';
import { wireRequestSubject } from '../../platform/namespace.ts';
import { parseTraceparent } from '../../platform/trace.ts';
import { Headers } from '../../contracts/envelope.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testSigner } from '../support/env.ts';
import { SignatureHeaders } from '../../platform/signing.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

const log = createLogger('silent');
const NATS = NATS_URL;
let nc: NatsConnection;
let hostA: ActorHost<TestCat>;
let hostB: ActorHost<TestCat>;
let caller: Caller<TestCat>;
const ctx = () => anonymousContext(randomUUID());

async function serveEcho(host: ActorHost<TestCat>, instance: string): Promise<void> {
  await host.serve('rtest', `rtest-${instance}`, {
    'svc.rtest.echo': async ({ name, times }) => ({ greeting: `hello ${name}`.repeat(times), instance }),
    'svc.rtest.fail': async ({ code }) => {
      throw new DomainError(code, `failed with ${code}`);
    },
    'svc.rtest.crash': async () => {
      throw new Error('boom');
    },
    // Deliberately wrong (the compiler says so too): the runtime must refuse to send a reply that breaks its schema.
    // @ts-expect-error `must` is a string in the catalogue
    'svc.rtest.badreply': async () => ({ must: 42 }),
    'svc.rtest.sleep': async ({ ms }, { signal }) => {
      await new Promise((r) => setTimeout(r, ms));
      return { slept: signal.aborted ? -1 : ms };
    },
    'svc.rtest.scope': async (_input, scope) => ({
      traceparent: scope.traceparent,
      deadline: scope.deadline,
      request_id: scope.ctx.request_id,
    }),
    'svc.rtest.nested': async (_input, scope) => ({
      outer: { traceparent: scope.traceparent, deadline: scope.deadline, request_id: scope.ctx.request_id },
      // Asks for a minute: a nested call never gets more than what is left of its parent's deadline.
      inner: await scope.call('svc.rtest.scope', {}, { deadline: Date.now() + 60_000 }),
    }),
    'svc.rtest.storedown': async () => {
      // What pg / ioredis / fetch throw when the server refuses the connection, wrapped as libraries do.
      throw new Error('query failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:5432 (password=hunter2)'), {
          code: 'ECONNREFUSED',
        }),
      });
    },
    'svc.rtest.bigint': async () => ({ n: 1n }),
    // What a row with a column too many looks like: production would send it as it is, so tests must refuse it.
    'svc.rtest.extra': async () => ({ kept: 'yes', password_hash: 'x' }) as { kept: string },
  });
}

beforeAll(async () => {
  nc = await connectNats(NATS, 'actors-test', log, NATS_CREDS, NATS_CA);
  hostA = new ActorHost(nc, testCatalogue, testSigner(), log);
  hostB = new ActorHost(nc, testCatalogue, testSigner(), log);
  await serveEcho(hostA, 'a');
  await serveEcho(hostB, 'b');
  caller = new Caller(() => nc, testCatalogue, testSigner(), 2000);
});

afterAll(async () => {
  await hostA.drain(100);
  await hostB.drain(100);
  await nc.drain();
});

describe('actor runtime', () => {
  it('answers a typed call with the parsed reply', async () => {
    const r = await caller.call('svc.rtest.echo', { name: 'x', times: 2 }, ctx());
    expect(r.greeting).toBe('hello xhello x');
  });

  it('spreads requests over instances of the same domain (queue group)', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++)
      seen.add((await caller.call('svc.rtest.echo', { name: 'q', times: 1 }, ctx())).instance);
    expect(seen).toEqual(new Set(['a', 'b']));
  });

  it('rejects input that fails the subject schema with bad_request naming the field', async () => {
    // Well-typed, but outside the schema's refinements (min length, max value): only the actor's zod parse catches it.
    const err = await caller.call('svc.rtest.echo', { name: '', times: 9 }, ctx()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('bad_request');
    expect((err as DomainError).message).toMatch(/name: /);
    expect((err as DomainError).message).toMatch(/times: /);
  });

  it('carries domain errors and hides unexpected ones', async () => {
    await expect(caller.call('svc.rtest.fail', { code: 'conflict' }, ctx())).rejects.toMatchObject({
      code: 'conflict',
      message: 'failed with conflict',
    });
    await expect(caller.call('svc.rtest.crash', {}, ctx())).rejects.toMatchObject({
      code: 'internal_error',
      message: 'internal error',
    });
    await expect(caller.call('svc.rtest.badreply', {}, ctx())).rejects.toMatchObject({ code: 'internal_error' });
  });

  it('answers unavailable at once when no actor serves the subject', async () => {
    const t0 = Date.now();
    await expect(caller.call('svc.rtest.unserved', {}, ctx())).rejects.toMatchObject({ code: 'unavailable' });
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('gives up with timeout when the deadline passes', async () => {
    const t0 = Date.now();
    await expect(caller.call('svc.rtest.sleep', { ms: 800 }, ctx(), { timeoutMs: 200 })).rejects.toMatchObject({
      code: 'timeout',
    });
    expect(Date.now() - t0).toBeLessThan(700);
  });

  it('carries the trace through nested calls: one trace id, a span per hop, the same deadline and request id', async () => {
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const c = ctx();
    const { outer, inner } = await caller.call('svc.rtest.nested', {}, c, { traceparent: parent, timeoutMs: 3000 });
    const o = parseTraceparent(outer.traceparent);
    const i = parseTraceparent(inner.traceparent);
    expect(o?.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(i?.traceId).toBe(o?.traceId);
    expect(new Set([o?.spanId, i?.spanId, 'b7ad6b7169203331']).size).toBe(3);
    expect(inner.deadline).toBe(outer.deadline);
    expect(outer.deadline - Date.now()).toBeLessThanOrEqual(3000);
    expect([outer.request_id, inner.request_id]).toEqual([c.request_id, c.request_id]);
  });

  it('starts a new trace when the caller sends none, or a malformed one', async () => {
    const seen = new Set<string>();
    for (const traceparent of [undefined, 'garbage', '00-00000000000000000000000000000000-b7ad6b7169203331-01']) {
      const r = await caller.call('svc.rtest.scope', {}, ctx(), traceparent === undefined ? {} : { traceparent });
      const t = parseTraceparent(r.traceparent);
      expect(t, String(traceparent)).toBeDefined();
      seen.add(t!.traceId);
    }
    expect(seen.size).toBe(3);
  });

  it('caps a deadline header claiming the far future instead of overflowing its timer', async () => {
    const h = natsHeaders();
    h.set(Headers.deadline, '99999999999999');
    h.set(Headers.requestId, 'far-future');
    const body = new TextEncoder().encode(JSON.stringify({ ctx: ctx(), input: { ms: 50 } }));
    const signed = testSigner().sign(wireRequestSubject('svc.rtest.sleep'), 'far-future', 99999999999999, body);
    h.set(SignatureHeaders.signedAt, signed.signedAt);
    h.set(SignatureHeaders.signature, signed.signature);
    const msg = await nc.request(wireRequestSubject('svc.rtest.sleep'), body, { timeout: 2000, headers: h });
    // An overflowing setTimeout fires at once: the handler would have seen an aborted signal (slept -1).
    expect(JSON.parse(msg.string())).toEqual({ ok: true, data: { slept: 50 } });
  });

  it('answers unavailable (not internal_error) when a backing store refuses connections, without its message', async () => {
    const err = await caller.call('svc.rtest.storedown', {}, ctx()).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable' });
    expect((err as Error).message).not.toMatch(/10\.0\.0\.7|hunter2|ECONNREFUSED/);
  });

  it('answers internal_error for a reply JSON cannot carry, and keeps serving', async () => {
    await expect(caller.call('svc.rtest.bigint', {}, ctx())).rejects.toMatchObject({
      code: 'internal_error',
      message: 'internal error',
    });
    await expect(caller.call('svc.rtest.echo', { name: 'still', times: 1 }, ctx())).resolves.toMatchObject({
      greeting: 'hello still',
    });
  });

  it('refuses, where replies are checked, a reply the schema would have trimmed: production sends replies unchecked', async () => {
    await expect(caller.call('svc.rtest.extra', {}, ctx())).rejects.toMatchObject({
      code: 'internal_error',
      message: 'internal error',
    });
    await expect(caller.call('svc.rtest.badreply', {}, ctx())).rejects.toMatchObject({ code: 'internal_error' });
  });

  it('sends the handler value as it is when reply checks are off (SVC_VALIDATE_REPLIES=false)', async () => {
    const unchecked = new ActorHost(nc, testCatalogue, testSigner(), log, 10_000, false);
    await unchecked.serve('rtest2', 'rtest2-unchecked', {
      'svc.rtest2.extra': async () => ({ kept: 'yes', extra: 1 }) as { kept: string },
    });
    try {
      expect(await caller.call('svc.rtest2.extra', {}, ctx())).toEqual({ kept: 'yes', extra: 1 });
    } finally {
      await unchecked.drain(100);
    }
  });

  it('answers $SRV.PING and STATS for each actor', async () => {
    const client = new Svcm(nc).client();
    const pings = [];
    for await (const p of await client.ping('rtest-a')) pings.push(p);
    expect(pings.length).toBeGreaterThanOrEqual(1);
    const stats = [];
    for await (const s of await client.stats('rtest-a')) stats.push(s);
    const echo = stats[0]?.endpoints?.find((e) => e.subject === wireRequestSubject('svc.rtest.echo'));
    expect(echo?.queue_group).toBe('rtest');
    expect(echo?.num_requests).toBeGreaterThan(0);
  });
});

describe('serve', () => {
  it('resolves only once the broker has the subscriptions, so another connection is answered at once', async () => {
    const proxy = await TcpProxy.forNats(NATS);
    const slowNc = await connectNats(proxy.url, 'actors-test-slow-link', log, NATS_CREDS, NATS_CA);
    const host = new ActorHost(slowNc, testCatalogue, testSigner(), log);
    try {
      // The serving connection's bytes reach the broker 300 ms late: without waiting for the broker, serve resolved
      // before its subscriptions existed and this call was answered "no actor is serving" (a flaky CI run of the
      // SIGTERM test below, whose fixture said "ready" too early).
      proxy.delayUpstream(300);
      await host.serve('rtest2', 'rtest2-slow-link', { 'svc.rtest2.extra': async () => ({ kept: 'yes' }) });
      await expect(caller.call('svc.rtest2.extra', {}, ctx())).resolves.toEqual({ kept: 'yes' });
    } finally {
      proxy.open();
      await host.drain(100);
      await slowNc.close();
      await proxy.close();
    }
  });
});

describe('SIGTERM', () => {
  it('drains an in-flight request to completion before the process exits', async () => {
    const child = spawn(process.execPath, ['test/fixtures/slow-actor.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      child.once('exit', (code) => reject(new Error(`fixture exited early: ${code}`)));
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Stop this file's own instances so the request can only land on the fixture process.
    await hostA.drain(100);
    await hostB.drain(100);
    const pending = caller.call('svc.rtest.sleep', { ms: 700 }, ctx(), { timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 150));
    child.kill('SIGTERM');
    await expect(pending).resolves.toEqual({ slept: 700 });
    expect(await exited).toBe(0);
    // After the drain nobody serves the subject any more.
    await expect(caller.call('svc.rtest.sleep', { ms: 1 }, ctx())).rejects.toMatchObject({ code: 'unavailable' });
  });
});
