import { jetstreamManager } from '@nats-io/jetstream';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backoffDelay, nextDelay, parseRetryAfter } from '../../actors/invoice/accounting/retry.ts';
import { SYNC_DURABLE } from '../../actors/invoice/accounting/worker.ts';
import { wireDurableName } from '../../platform/namespace.ts';
import { DlqHeaders, dlqSubjectFor } from '../../contracts/streams.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { caller, data, expectStatus, startInvoiceFixture, type InvoiceFixture, type Json } from './support.ts';

// Each test waits for a sync (a PDF finalized first) that a loaded machine takes longer than the default 30 s for.
vi.setConfig({ testTimeout: 90_000 });

/**
 * A stand-in accounting system on a free local port. It dedups by Idempotency-Key as a real one would (a repeated
 * key gets the first answer and creates nothing), and plays a script per invoice id before it accepts one.
 */
interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: Json;
}
interface Seen {
  at: number;
  status: number;
  key: string | undefined;
  auth: string | undefined;
  body: Json;
}
class Peer {
  server: Server = createServer((req, res) => void this.handle(req, res));
  url = '';
  seen = new Map<string, Seen[]>();
  created = new Map<string, string>();
  script = new Map<string, Reply[]>();
  always = new Map<string, Reply>();

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }
  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
    const key = req.headers['idempotency-key'] as string | undefined;
    const invoiceId = String(body.id);
    const reply = this.answer(req, invoiceId, key);
    const list = this.seen.get(invoiceId) ?? [];
    list.push({ at: Date.now(), status: reply.status, key, auth: req.headers.authorization, body });
    this.seen.set(invoiceId, list);
    res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(reply.body ?? { error: `status ${reply.status}` }));
  }
  private answer(req: IncomingMessage, invoiceId: string, key: string | undefined): Reply {
    if (req.method !== 'POST' || req.url !== '/api/invoices') return { status: 404 };
    if (req.headers.authorization !== 'Bearer acc-token') return { status: 401 };
    if (!key) return { status: 400, body: { error: 'Idempotency-Key required' } };
    const known = this.created.get(key);
    if (known) return { status: 200, body: { id: known } };
    const fixed = this.always.get(invoiceId);
    if (fixed) return fixed;
    const next = this.script.get(invoiceId)?.shift();
    if (next) return next;
    const id = `ACC-${this.created.size + 1}`;
    this.created.set(key, id);
    return { status: 201, body: { id } };
  }
}

let fx: InvoiceFixture;
let sys: TestSystem;
const peer = new Peer();
const call = caller(() => fx);

beforeAll(async () => {
  await peer.start();
  // Short backoffs so retries take milliseconds; Retry-After (1 s) is still honoured, capped at 5 s.
  fx = await startInvoiceFixture({
    SVC_ACCOUNTING_URL: peer.url,
    SVC_ACCOUNTING_TOKEN: 'acc-token',
    SVC_ACCOUNTING_BACKOFF_MS: '50,100',
    SVC_ACCOUNTING_MAX_ATTEMPTS: '5',
    SVC_ACCOUNTING_RETRY_AFTER_MAX_SECONDS: '5',
  });
  sys = fx.sys;
});
afterAll(async () => {
  await sys?.stop();
  await peer.stop();
});

interface Inv extends Json {
  id: string;
  status: string;
  version: number;
  total_amount: string;
  accounting_sync_state: string | null;
  accounting_sync_at: string | null;
  accounting_external_id: string | null;
  accounting_sync_error: string | null;
  accounting_synced_version: number | null;
  line_items: Json[];
}

async function invoice(to: 'draft' | 'approved'): Promise<Inv> {
  const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: fx.keys.ret }));
  const res = await call('POST', '/api/v1/invoices/generate', preview);
  expectStatus(res, 201);
  const inv = data<Inv>(res);
  if (to === 'draft') return inv;
  expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
  const approved = await call('POST', `/api/v1/invoices/${inv.id}/approve`);
  expectStatus(approved, 200);
  return data<Inv>(approved);
}

const get = async (id: string): Promise<Inv> => data<Inv>(await call('GET', `/api/v1/invoices/${id}`));

/**
 * Waits for the sync to leave `queued`. A sync takes about a second; one still queued after SLOW_MS is reported with
 * what the peer saw and the worker's durable (so a slow run in CI leaves its evidence even when it then passes), and
 * one still queued at the end fails with the same.
 */
const SLOW_MS = 10_000;
async function settled(id: string, timeoutMs = 60_000): Promise<Inv> {
  const start = Date.now();
  let reported = false;
  for (;;) {
    const inv = await get(id);
    if (inv.accounting_sync_state !== 'queued') return inv;
    const waited = Date.now() - start;
    if (waited > timeoutMs)
      expect.fail(
        `sync of ${id} still queued after ${timeoutMs} ms: ${inv.accounting_sync_error}; ${await evidence(id)}`,
      );
    if (waited > SLOW_MS && !reported) {
      reported = true;
      console.warn(`[sync] ${id} still queued after ${waited} ms: ${await evidence(id)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** What the peer answered for the invoice, and the worker's durable: pending, waiting pulls, redeliveries. */
async function evidence(id: string): Promise<string> {
  const seen = (peer.seen.get(id) ?? []).map((s) => s.status);
  const info = await jetstreamManager(sys.nc)
    .then((jsm) => jsm.consumers.info('SVC_WORK', wireDurableName(SYNC_DURABLE)))
    .then(
      (c) =>
        `pending ${c.num_pending}, ack pending ${c.num_ack_pending}, redelivered ${c.num_redelivered}, waiting pulls ${c.num_waiting}, delivered ${c.delivered.stream_seq}`,
      (err: unknown) => `durable info failed: ${String(err)}`,
    );
  return `peer answered ${JSON.stringify(seen)}; durable: ${info}`;
}

async function lastDeadLetter(): Promise<
  { invoice_id: string; reason: string | undefined; error: string | undefined } | undefined
> {
  const jsm = await jetstreamManager(sys.nc);
  const m = await jsm.streams.getMessage('SVC_DLQ', { last_by_subj: dlqSubjectFor(wireDurableName(SYNC_DURABLE)) });
  if (!m) return undefined;
  return {
    invoice_id: m.json<{ invoice_id: string }>().invoice_id,
    reason: m.header.get(DlqHeaders.reason),
    error: m.header.get(DlqHeaders.error),
  };
}

describe('POST /api/v1/invoices/:id/sync-accounting', () => {
  it('retries 500, 500, 429 + Retry-After: 1, then records the id of the one invoice created on the other side', async () => {
    const inv = await invoice('approved');
    expect(inv.accounting_sync_state).toBeNull();
    peer.script.set(inv.id, [{ status: 500 }, { status: 500 }, { status: 429, headers: { 'retry-after': '1' } }]);

    // A double click: both answered, one job queued.
    const [a, b] = await Promise.all([
      call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`),
      call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`),
    ]);
    expectStatus(a, 200);
    expectStatus(b, 200);
    expect([data<{ message: string }>(a).message, data<{ message: string }>(b).message].sort()).toEqual([
      'accounting sync already queued (attempt 1)',
      'accounting sync queued (attempt 1)',
    ]);

    const done = await settled(inv.id);
    expect(done).toMatchObject({
      accounting_sync_state: 'synced',
      accounting_external_id: expect.stringMatching(/^ACC-\d+$/),
      accounting_sync_error: null,
      accounting_synced_version: inv.version,
      version: inv.version,
      status: 'approved',
    });
    expect(Date.parse(done.accounting_sync_at ?? '')).not.toBeNaN();

    const seen = peer.seen.get(inv.id) ?? [];
    expect(seen.map((s) => s.status)).toEqual([500, 500, 429, 201]);
    expect(new Set(seen.map((s) => s.key))).toEqual(new Set([`${inv.id}:${inv.version}`]));
    expect(seen.every((s) => s.auth === 'Bearer acc-token')).toBe(true);
    expect([...peer.created.entries()].filter(([k]) => k.startsWith(inv.id))).toEqual([
      [`${inv.id}:${inv.version}`, done.accounting_external_id],
    ]);
    // Retry-After: 1 was waited for (with a few ms of timer slack); the 500s only for the short test backoff.
    expect(seen[3]!.at - seen[2]!.at).toBeGreaterThanOrEqual(990);
    expect(seen[1]!.at - seen[0]!.at).toBeLessThan(900);
    // The body: the invoice and its lines.
    expect(seen[3]!.body).toMatchObject({
      id: inv.id,
      version: inv.version,
      total_amount: inv.total_amount,
      currency: 'EUR',
      previous_external_id: null,
    });
    expect((seen[3]!.body.line_items as Json[]).length).toBe(inv.line_items.length);

    // The list items keep exactly their fields.
    const list = data<Json[]>(await call('GET', `/api/v1/invoices?application_key=${fx.keys.ret}&per_page=100`));
    expect(Object.keys(list[0]!).sort()).toEqual([
      'application_key',
      'created_at',
      'currency',
      'customer_key',
      'deal_type',
      'display_number',
      'id',
      'period_end',
      'period_start',
      'status',
      'total_amount',
    ]);

    // Re-sync of the same version: nothing queued, nothing sent.
    const again = await call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`);
    expectStatus(again, 200);
    expect(data<{ message: string }>(again).message).toBe(
      `already synced to accounting as ${done.accounting_external_id} (version ${inv.version}); nothing queued`,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(peer.seen.get(inv.id)).toHaveLength(4);

    const history = data<{ edit_type: string; new_value: string; edited_by: string }[]>(
      await call('GET', `/api/v1/invoices/${inv.id}/edit-history`),
    ).filter((h) => h.edit_type === 'accounting_sync');
    expect(history.map((h) => h.new_value)).toEqual([
      `queued (version ${inv.version})`,
      `synced ${done.accounting_external_id} (version ${inv.version})`,
    ]);
    expect(history[0]!.edited_by).toBe(fx.rootEmail);
  });

  it('a sent invoice (a new version) is pushed again under a new key, naming the previous external id', async () => {
    const inv = await invoice('approved');
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`), 200);
    const first = await settled(inv.id);
    expect(first.accounting_sync_state).toBe('synced');
    const sent = data<Inv>(await call('POST', `/api/v1/invoices/${inv.id}/send`));
    expect(sent).toMatchObject({
      status: 'sent',
      version: inv.version + 1,
      accounting_sync_state: 'synced',
      accounting_synced_version: inv.version,
    });
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`), 200);
    const second = await settled(inv.id);
    expect(second).toMatchObject({ accounting_sync_state: 'synced', accounting_synced_version: sent.version });
    const seen = peer.seen.get(inv.id) ?? [];
    expect(seen.map((s) => s.key)).toEqual([`${inv.id}:${inv.version}`, `${inv.id}:${sent.version}`]);
    expect(seen[1]!.body).toMatchObject({ status: 'sent', previous_external_id: first.accounting_external_id });
  });

  it('a permanent 422 marks the invoice failed and dead-letters the job after one attempt', async () => {
    const inv = await invoice('approved');
    peer.always.set(inv.id, { status: 422, body: { error: 'customer unknown' } });
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`), 200);
    const done = await settled(inv.id);
    expect(done).toMatchObject({ accounting_sync_state: 'failed', accounting_external_id: null });
    expect(done.accounting_sync_error).toContain('accounting system answered 422');
    await new Promise((r) => setTimeout(r, 300));
    expect(peer.seen.get(inv.id)?.map((s) => s.status)).toEqual([422]);
    const dlq = await lastDeadLetter();
    expect(dlq).toMatchObject({ invoice_id: inv.id, reason: 'rejected' });
    expect(dlq?.error).toContain('422');

    // Asking again after a failure queues a new job (a new attempt), which the peer refuses again.
    const again = await call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`);
    expect(data<{ message: string }>(again).message).toBe('accounting sync queued (attempt 2)');
    expect((await settled(inv.id)).accounting_sync_state).toBe('failed');
    expect(peer.seen.get(inv.id)).toHaveLength(2);
  });

  it('a peer that never recovers gets the bounded attempts, then the job is dead-lettered and the invoice failed', async () => {
    const inv = await invoice('approved');
    peer.always.set(inv.id, { status: 503 });
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/sync-accounting`), 200);
    const done = await settled(inv.id);
    expect(done.accounting_sync_state).toBe('failed');
    expect(done.accounting_sync_error).toContain('503');
    await new Promise((r) => setTimeout(r, 300));
    expect(peer.seen.get(inv.id)).toHaveLength(5);
    expect(await lastDeadLetter()).toMatchObject({ invoice_id: inv.id, reason: 'failed' });
  });

  it('400 for a draft, a bad uuid or no integration configured (naming the variables); 404 for an unknown id', async () => {
    const draft = await invoice('draft');
    const res = await call('POST', `/api/v1/invoices/${draft.id}/sync-accounting`);
    expectStatus(res, 400);
    expect(errorOf(res)).toMatchObject({
      code: 'VALIDATION_ERROR',
      message: 'only an approved or sent invoice can be synced to accounting; this invoice is draft',
    });

    const bad = await call('POST', '/api/v1/invoices/not-a-uuid/sync-accounting');
    expectStatus(bad, 400);
    expect(errorOf(bad).code).toBe('VALIDATION_ERROR');

    const unknown = await call('POST', '/api/v1/invoices/00000000-0000-4000-8000-000000000000/sync-accounting');
    expectStatus(unknown, 404);
    expect(errorOf(unknown)).toMatchObject({ code: 'NOT_FOUND', message: 'invoice not found' });

    // The actor reads the configuration per request: take the token away for one call.
    const approved = await invoice('approved');
    const token = sys.config.SVC_ACCOUNTING_TOKEN;
    sys.config.SVC_ACCOUNTING_TOKEN = undefined;
    try {
      const off = await call('POST', `/api/v1/invoices/${approved.id}/sync-accounting`);
      expectStatus(off, 400);
      expect(errorOf(off).code).toBe('VALIDATION_ERROR');
      expect(errorOf(off).message).toContain('SVC_ACCOUNTING_URL');
      expect(errorOf(off).message).toContain('SVC_ACCOUNTING_TOKEN');
    } finally {
      sys.config.SVC_ACCOUNTING_TOKEN = token;
    }
    expect((await get(approved.id)).accounting_sync_state).toBeNull();
    expect(peer.seen.has(approved.id)).toBe(false);
  });
});

describe('retry timing', () => {
  it('reads Retry-After as seconds or an HTTP date, and ignores what it cannot read', () => {
    const now = Date.parse('2026-11-15T12:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 15 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 15 Nov 2026 11:00:00 GMT', now)).toBe(0);
    for (const v of [undefined, null, '', '-5', '1.5', 'soon', 'in 5 minutes'])
      expect(parseRetryAfter(v, now)).toBeUndefined();
  });

  it('caps Retry-After and jitters the backoff within [d/2, d], repeating the last step', () => {
    expect(nextDelay({ retryAfterMs: 3_600_000, scheduleMs: [100], attempt: 1, maxMs: 300_000 })).toBe(300_000);
    expect(nextDelay({ retryAfterMs: 1000, scheduleMs: [100], attempt: 1, maxMs: 300_000 })).toBe(1000);
    expect(backoffDelay([1000, 4000], 1, () => 0)).toBe(500);
    expect(backoffDelay([1000, 4000], 1, () => 1)).toBe(1000);
    expect(backoffDelay([1000, 4000], 7, () => 0.5)).toBe(3000);
  });
});
