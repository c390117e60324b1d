import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { iso } from '../../actors/identity/admin/common.ts';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { wireRequestSubject } from '../../platform/namespace.ts';
import { connectNats } from '../../platform/nats.ts';
import { jsonText } from '../../platform/json-text.ts';
import { ActorHost } from '../../platform/serve.ts';
import { SignatureHeaders } from '../../platform/signing.ts';
import { continueTrace, newTrace, parseTraceparent, formatTraceparent } from '../../platform/trace.ts';
import { Headers } from '../../contracts/envelope.ts';
import { NATS_CA, NATS_CREDS, NATS_URL, testSigner } from '../support/env.ts';
import { testCatalogue } from '../support/test-catalogue.ts';

/** The shortcuts taken on the per-request path (docs/benchmarks.md) keep their behaviour. */

describe('timestamps from PostgreSQL text', () => {
  const slow = (v: string): string =>
    new Date(Date.parse(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))).toISOString();
  it.each([
    '2026-01-02 03:04:05+00',
    '2026-01-02 03:04:05.1+00',
    '2026-01-02 03:04:05.12+00',
    '2026-01-02 03:04:05.123+00',
    '2026-12-31 23:59:59.999999+00',
    '1999-02-28 00:00:00.000456+00',
  ])('the fast path for %s equals the Date round trip', (v) => expect(iso(v)).toBe(slow(v)));
  it('still converts other offsets and Dates', () => {
    expect(iso('2026-01-02 03:04:05.5+02')).toBe('2026-01-02T01:04:05.500Z');
    expect(iso(new Date(Date.UTC(2026, 0, 2)))).toBe('2026-01-02T00:00:00.000Z');
    expect(() => iso('yesterday')).toThrow(/unparseable/);
  });
});

describe('trace ids from the pooled random source', () => {
  it('are well-formed, non-zero and distinct across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const t = newTrace();
      expect(parseTraceparent(formatTraceparent(t))).toEqual(t);
      seen.add(t.traceId);
      seen.add(t.spanId);
    }
    expect(seen.size).toBe(10_000);
    const child = continueTrace(formatTraceparent(newTrace()));
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/);
  });
});

describe('envelopes without zod on the hot path', () => {
  const log = createLogger('silent');
  let nc: NatsConnection;
  let host: ActorHost<typeof testCatalogue>;
  beforeAll(async () => {
    nc = await connectNats(NATS_URL, 'hot-path-test', log, NATS_CREDS, NATS_CA);
    host = new ActorHost(nc, testCatalogue, testSigner(), log);
    await host.serve('rtest', 'rtest-hot', {
      'svc.rtest.echo': async ({ name, times }) => ({ greeting: `hello ${name}`.repeat(times), instance: 'hot' }),
    });
  });
  afterAll(async () => {
    await host.drain(100);
    await nc.drain();
  });

  it('answers bad_request to a signed message that is not an envelope', async () => {
    for (const body of ['[]', 'null', '{"input":{}}', '{"ctx":null,"input":{}}', '{"ctx":{}}']) {
      const payload = new TextEncoder().encode(body);
      const deadline = Date.now() + 5000;
      const signed = testSigner().sign(wireRequestSubject('svc.rtest.echo'), 'r1', deadline, payload);
      const h = natsHeaders();
      h.set(Headers.requestId, 'r1');
      h.set(Headers.deadline, String(deadline));
      h.set(SignatureHeaders.signedAt, signed.signedAt);
      h.set(SignatureHeaders.signature, signed.signature);
      const msg = await nc.request(wireRequestSubject('svc.rtest.echo'), payload, { timeout: 3000, headers: h });
      expect(msg.json(), body).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    }
  });

  it('turns a malformed reply into internal_error and a well-formed error reply into its DomainError', async () => {
    const replies = [
      'not json',
      '{"ok":"yes"}',
      '{"ok":false,"error":{"code":"nonsense","message":"x"}}',
      '{"ok":false,"error":{"code":"conflict","message":"taken","details":{"k":1}}}',
    ];
    let i = 0;
    const sub = nc.subscribe(wireRequestSubject('svc.rtest.bigint'), {
      callback: (_e, m) => void m.respond(replies[i++]!),
    });
    await nc.flush();
    try {
      const caller = new Caller(() => nc, testCatalogue, testSigner(), 2000);
      const ctx = { request_id: 'x', principal: { kind: 'anonymous' as const } };
      await expect(caller.call('svc.rtest.bigint', {}, ctx)).rejects.toMatchObject({
        code: 'internal_error',
        message: expect.stringMatching(/not JSON/),
      });
      await expect(caller.call('svc.rtest.bigint', {}, ctx)).rejects.toMatchObject({
        code: 'internal_error',
        message: expect.stringMatching(/malformed reply/),
      });
      await expect(caller.call('svc.rtest.bigint', {}, ctx)).rejects.toMatchObject({
        code: 'internal_error',
        message: expect.stringMatching(/malformed reply/),
      });
      await expect(caller.call('svc.rtest.bigint', {}, ctx)).rejects.toMatchObject({
        code: 'conflict',
        message: 'taken',
        details: { k: 1 },
      });
    } finally {
      sub.unsubscribe();
    }
  });

  it('cuts a page reply into the list envelope without parsing it, and renders any other layout the same way', async () => {
    const tricky = [
      { n: 1, s: '],"total":9,"page":9,"per_page":9}}' },
      { n: 2, s: 'ü雪 "q" \\ ]}' },
      { n: 3, s: '' },
    ];
    // Rewritten in the received bytes: a reply spanning many socket reads (the parser's grown buffer) as well.
    const large = Array.from({ length: 2000 }, (_, n) => ({ n, s: `ticket ${n} — ü雪`.repeat(12) }));
    const cases: {
      reply: string;
      data: unknown[];
      meta: { total: number; page: number; per_page: number };
      cut: boolean;
    }[] = [
      {
        reply: JSON.stringify({ ok: true, data: { items: large, total: 100000, page: 1, per_page: 2000 } }),
        data: large,
        meta: { total: 100000, page: 1, per_page: 2000 },
        cut: true,
      },
      // pageOf's key order: cut.
      {
        reply: JSON.stringify({ ok: true, data: { items: tricky, total: 1234567, page: 2, per_page: 3 } }),
        data: tricky,
        meta: { total: 1234567, page: 2, per_page: 3 },
        cut: true,
      },
      {
        reply: JSON.stringify({ ok: true, data: { items: [], total: 0, page: 1, per_page: 20 } }),
        data: [],
        meta: { total: 0, page: 1, per_page: 20 },
        cut: true,
      },
      {
        reply: JSON.stringify({ ok: true, data: { items: [[1], [2]], total: 2, page: 1, per_page: 2 } }),
        data: [[1], [2]],
        meta: { total: 2, page: 1, per_page: 2 },
        cut: true,
      },
      // Another key order: parsed and rendered. (The first case holds an item string that looks like the tail.)
      {
        reply: JSON.stringify({ ok: true, data: { total: 3, page: 1, per_page: 3, items: tricky } }),
        data: tricky,
        meta: { total: 3, page: 1, per_page: 3 },
        cut: false,
      },
      {
        reply: JSON.stringify({ ok: true, data: { page: 1, items: [{ n: 5 }], per_page: 1, total: 1 } }),
        data: [{ n: 5 }],
        meta: { total: 1, page: 1, per_page: 1 },
        cut: false,
      },
    ];
    let i = 0;
    const sub = nc.subscribe(wireRequestSubject('svc.rtest.page'), {
      callback: (_e, m) =>
        void m.respond(cases[i++]?.reply ?? '{"ok":false,"error":{"code":"forbidden","message":"no"}}'),
    });
    await nc.flush();
    try {
      const caller = new Caller(() => nc, testCatalogue, testSigner(), 2000);
      const ctx = { request_id: 'x', principal: { kind: 'anonymous' as const } };
      for (const c of cases) {
        const bytes = await caller.callForwardedPage('svc.rtest.page', { page: 1, per_page: 1 }, ctx);
        const text = new TextDecoder().decode(bytes);
        expect(JSON.parse(text), c.reply).toEqual({ data: c.data, meta: c.meta });
        // A cut answer keeps the actor's bytes of the items as they are.
        if (c.cut) expect(text).toBe(`{"data":${JSON.stringify(c.data)},"meta":${JSON.stringify(c.meta)}}`);
      }
      await expect(caller.callForwardedPage('svc.rtest.page', { page: 1, per_page: 1 }, ctx)).rejects.toMatchObject({
        code: 'forbidden',
        message: 'no',
      });
    } finally {
      sub.unsubscribe();
    }
  });
});

describe('replies held as JSON text (JsonText)', () => {
  const log = createLogger('silent');
  let nc: NatsConnection;
  const hosts: ActorHost<typeof testCatalogue>[] = [];
  // Multi-byte characters in and across parts: the bytes are counted per part, not per character.
  const greeting = 'grüße — 你好 🚀 "quoted" \\ end';
  beforeAll(async () => {
    nc = await connectNats(NATS_URL, 'json-text-test', log, NATS_CREDS, NATS_CA);
    const checked = new ActorHost(nc, testCatalogue, testSigner(), log);
    await checked.serve('rtest', 'rtest-json-text', {
      'svc.rtest.echo': async ({ name }) =>
        jsonText<{ greeting: string; instance: string }>([
          '{"greeting":',
          JSON.stringify(`${greeting} ${name}`),
          ',"instance":"json-text"}',
        ]),
      // Valid JSON that breaks the reply schema, and text that is not JSON: both are the handler's bug.
      'svc.rtest.badreply': async () => jsonText<{ must: string }>(['{"must":', '1}']),
      'svc.rtest.crash': async () => jsonText<Record<string, never>>(['{"open":']),
    });
    // Production sends the parts unchecked.
    const unchecked = new ActorHost(nc, testCatalogue, testSigner(), log, 10_000, false);
    await unchecked.serve('rtest', 'rtest-json-text-unchecked', {
      'svc.rtest.scope': async () => jsonText<never>(['{"as":"sent"', ',"é":1}']),
    });
    hosts.push(checked, unchecked);
  });
  afterAll(async () => {
    for (const h of hosts) await h.drain(100);
    await nc.drain();
  });

  it('sends the parts as the reply, byte for byte inside the envelope', async () => {
    const caller = new Caller(() => nc, testCatalogue, testSigner(), 2000);
    const ctx = { request_id: 'x', principal: { kind: 'anonymous' as const } };
    await expect(caller.call('svc.rtest.echo', { name: 'Ünïcode', times: 1 }, ctx)).resolves.toEqual({
      greeting: `${greeting} Ünïcode`,
      instance: 'json-text',
    });
    const bytes = await caller.callForwarded('svc.rtest.echo', { name: 'x', times: 1 }, ctx);
    expect(new TextDecoder().decode(bytes)).toBe(
      `{"data":{"greeting":${JSON.stringify(`${greeting} x`)},"instance":"json-text"}}`,
    );
    // A reply of many socket reads, cut in its own bytes.
    const long = 'ü雪 '.repeat(60_000);
    const big = await caller.callForwarded('svc.rtest.echo', { name: long, times: 1 }, ctx);
    expect(new TextDecoder().decode(big)).toBe(
      `{"data":{"greeting":${JSON.stringify(`${greeting} ${long}`)},"instance":"json-text"}}`,
    );
  });

  it('holds the text to the reply schema where replies are validated, and answers internal_error otherwise', async () => {
    const caller = new Caller(() => nc, testCatalogue, testSigner(), 2000);
    const ctx = { request_id: 'x', principal: { kind: 'anonymous' as const } };
    await expect(caller.call('svc.rtest.badreply', {}, ctx)).rejects.toMatchObject({ code: 'internal_error' });
    await expect(caller.call('svc.rtest.crash', {}, ctx)).rejects.toMatchObject({ code: 'internal_error' });
    const sent = await caller.callForwarded('svc.rtest.scope', {}, ctx);
    expect(new TextDecoder().decode(sent)).toBe('{"data":{"as":"sent","é":1}}');
  });
});
