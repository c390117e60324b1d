import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { caller, data, expectStatus, startInvoiceFixture, type InvoiceFixture, type Json } from './support.ts';

let fx: InvoiceFixture;
let sys: TestSystem;
let root: string;
let rootEmail: string;
let tag: string;
let keys: InvoiceFixture['keys'];
const call = caller(() => fx);

beforeAll(async () => {
  fx = await startInvoiceFixture({ SVC_ENABLE_DEBUG_ENDPOINTS: 'true' });
  ({ sys, root, rootEmail, tag, keys } = fx);
});
afterAll(() => sys?.stop());

const RET_OCTOBER = {
  base_amount: '2000.00',
  overtime_hours: '2.0000',
  overtime_amount: '300.00',
  total_amount: '2300.00',
  total_hours: '12.0000',
  is_overtime: true,
};

describe('authentication and permissions', () => {
  it('answers 401 UNAUTHORIZED without a token and 403 FORBIDDEN without invoices permissions', async () => {
    for (const [method, url, body] of [
      ['GET', '/api/v1/invoices'],
      ['GET', `/api/v1/invoices/${crypto.randomUUID()}`],
      ['POST', '/api/v1/invoices/prefill', { application_key: keys.ret }],
      ['POST', '/api/v1/invoices/generate-bulk', { period_start: '2026-10-01', period_end: '2026-10-31' }],
    ] as const) {
      const res = await call(method, url, body, null);
      expectStatus(res, 401);
      expect(errorOf(res).code).toBe('UNAUTHORIZED');
    }
    const client = await createClient(sys);
    const viewer = await createUser(sys);
    await assignRole(sys, viewer.id, client.id, roleIdByName('Viewer'));
    const res = await call('GET', '/api/v1/invoices', undefined, await tokenFor(sys, viewer));
    expectStatus(res, 403);
    expect(errorOf(res)).toMatchObject({ code: 'FORBIDDEN', message: 'missing permission invoices:read' });
  });
});

describe('prefill', () => {
  it('builds the previous month by default, from the analytics data, with customer and application, saving nothing', async () => {
    const before = await sys.sql<{ n: number }>(`SELECT count(*)::int AS n FROM invoices WHERE application_key = ?`, [
      keys.ret,
    ]);
    const res = await call('POST', '/api/v1/invoices/prefill', { application_key: keys.ret });
    expectStatus(res, 200);
    const p = data(res);
    expect(p).toMatchObject({
      application_key: keys.ret,
      customer_key: keys.cust,
      period_start: '2026-10-01',
      period_end: '2026-10-31',
      deal_type: 'RET',
      currency: 'EUR',
      ...RET_OCTOBER,
    });
    expect(p).not.toHaveProperty('id');
    expect(p).not.toHaveProperty('display_number');
    expect(p).not.toHaveProperty('status');
    expect(p.customer).toEqual({
      customer_key: keys.cust,
      name: 'Acme <Logistics> GmbH',
      email: 'billing@acme.example',
      address: 'Hafenstraße 12, Hamburg',
      country: 'DE',
      vat_id: 'DE123',
    });
    expect(p.application).toEqual({
      application_key: keys.ret,
      customer_key: keys.cust,
      name: `App ${keys.ret}`,
      is_active: true,
      deal_type: 'RET',
      currency: 'EUR',
      base_amount: '2000.00',
      included_hours: '10.0000',
      hourly_rate: '95.00',
      overtime_rate: '120.00',
    });
    const lines = p.line_items as Json[];
    expect(lines.map((l) => [l.line_type, l.tracker_key, l.quantity, l.unit_price, l.line_total])).toEqual([
      ['base', null, '1.0000', '2000.00', '2000.00'],
      ['task', 'X-1', '8.0000', '0.00', '0.00'],
      ['task', 'X-2', '1.0000', '0.00', '0.00'],
      ['task', 'X-2', '3.0000', '0.00', '0.00'],
      ['overtime', null, '1.0000', '120.00', '120.00'],
      ['overtime', null, '1.0000', '180.00', '180.00'],
    ]);
    expect(Object.keys(lines[1]!).sort()).toEqual(
      [
        'billable_seconds',
        'description',
        'is_auto_generated',
        'line_total',
        'line_type',
        'linked_issue_key',
        'quantity',
        'rate_multiplier',
        'rate_tier',
        'sort_order',
        'source',
        'time_seconds',
        'tracker_key',
        'unit_price',
        'worklog_date',
      ].sort(),
    );
    const after = await sys.sql<{ n: number }>(`SELECT count(*)::int AS n FROM invoices WHERE application_key = ?`, [
      keys.ret,
    ]);
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('takes an explicit period, and refuses bad input with 400 VALIDATION_ERROR naming the field, an unknown application with 404', async () => {
    const nov = data(
      await call('POST', '/api/v1/invoices/prefill', {
        application_key: keys.ret,
        period_start: '2026-11-01',
        period_end: '2026-11-30',
      }),
    );
    expect(nov).toMatchObject({
      total_hours: '17.5000',
      overtime_hours: '7.5000',
      overtime_amount: '900.00',
      total_amount: '2900.00',
    });
    const cases: [Json, string][] = [
      [{ application_key: keys.ret, period_start: '2026-10-31', period_end: '2026-10-01' }, 'body.period_end'],
      [{ application_key: keys.ret, period_start: '2026-10-01' }, 'body.period_end'],
      [{ application_key: keys.ret, period_start: '2026-02-30', period_end: '2026-03-01' }, 'body.period_start'],
      [{ application_key: keys.ret, period_start: '2020-01-01', period_end: '2026-01-01' }, 'body.period_end'],
      [{ application_key: '' }, 'body.application_key'],
      [{}, 'body.application_key'],
    ];
    for (const [body, field] of cases) {
      const res = await call('POST', '/api/v1/invoices/prefill', body);
      expectStatus(res, 400);
      expect(errorOf(res).code).toBe('VALIDATION_ERROR');
      expect(errorOf(res).message).toContain(field);
    }
    const missing = await call('POST', '/api/v1/invoices/prefill', { application_key: `NOPE-${tag}` });
    expectStatus(missing, 404);
    expect(errorOf(missing)).toMatchObject({ code: 'NOT_FOUND', message: 'application not found' });
  });
});

describe('generate, get and list', () => {
  it('saves the preview as a draft that equals it to the cent, with INV-<n> and version 1; get returns the same', async () => {
    const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: keys.ret }));
    const res = await call('POST', '/api/v1/invoices/generate', preview);
    expectStatus(res, 201);
    const inv = data(res);
    expect(inv).toMatchObject({
      status: 'draft',
      version: 1,
      application_key: keys.ret,
      customer_key: keys.cust,
      deal_type: 'RET',
      currency: 'EUR',
      period_start: '2026-10-01',
      period_end: '2026-10-31',
      ...RET_OCTOBER,
    });
    expect(inv.display_number).toMatch(/^INV-\d+$/);
    expect(inv).toMatchObject({
      invoice_date: '2026-11-15',
      show_task_list: true,
      show_tracked_time: true,
      show_task_pricing: true,
      show_overtime: true,
      legal_text: '',
      html_override: null,
    });
    const lines = inv.line_items as Json[];
    const strip = (l: Json): Json => Object.fromEntries(Object.entries(l).filter(([k]) => k !== 'id'));
    expect(lines.map(strip)).toEqual(preview.line_items);
    expect(new Set(lines.map((l) => l.id)).size).toBe(lines.length);
    const got = await call('GET', `/api/v1/invoices/${String(inv.id)}`);
    expectStatus(got, 200);
    expect(data(got)).toEqual(inv);
    const [stored] = await sys.sql<{ created_by: string }>(`SELECT created_by FROM invoices WHERE id = ?`, [inv.id]);
    expect(stored!.created_by).toBe(rootEmail);
  });

  it('refuses figures and line totals that disagree with the policy, and unknown applications', async () => {
    const line = { line_type: 'manual', description: 'Consulting', quantity: '0.5000', unit_price: '118.75' };
    const base = { application_key: keys.tm, period_start: '2026-09-01', period_end: '2026-09-30' };
    const ok = await call('POST', '/api/v1/invoices/generate', {
      ...base,
      total_amount: '59.38',
      line_items: [{ ...line, line_total: '59.38' }],
    });
    expectStatus(ok, 201);
    expect(data(ok)).toMatchObject({
      total_amount: '59.38',
      base_amount: '0.00',
      total_hours: '0.0000',
      is_overtime: false,
    });
    expect((data(ok).line_items as Json[])[0]).toMatchObject({
      source: 'manual',
      is_auto_generated: false,
      sort_order: 0,
      line_total: '59.38',
    });
    const cases: [Json, number, string][] = [
      [{ ...base, total_amount: '59.37', line_items: [line] }, 400, 'body.total_amount: the line items give 59.38'],
      [{ ...base, line_items: [{ ...line, line_total: '59.37' }] }, 400, 'body.line_items.0.line_total'],
      [{ ...base, line_items: [{ ...line, quantity: 0.5 }] }, 400, 'body.line_items.0.quantity'],
      [{ ...base, line_items: [{ ...line, line_type: 'gift' }] }, 400, 'body.line_items.0.line_type'],
      [{ ...base, deal_type: 'RET', line_items: [] }, 400, 'body.deal_type'],
      [{ ...base, currency: 'USD', line_items: [] }, 400, 'body.currency'],
      [{ ...base, is_overtime: true, line_items: [] }, 400, 'body.is_overtime'],
      [{ application_key: keys.tm, line_items: [] }, 400, 'body.period_start'],
      [{ ...base }, 400, 'body.line_items'],
      [
        { ...base, line_items: [{ ...line, quantity: '999999999999.9999', unit_price: '9999999999999.999999' }] },
        400,
        'body.line_items.0: quantity × unit_price',
      ],
      [
        { ...base, line_items: [1, 2, 3].map(() => ({ ...line, quantity: '99999999999', unit_price: '99' })) },
        400,
        'body.line_items: the invoice total',
      ],
      [{ ...base, application_key: `NOPE-${tag}`, line_items: [] }, 404, 'application not found'],
    ];
    for (const [body, status, message] of cases) {
      const res = await call('POST', '/api/v1/invoices/generate', body);
      expectStatus(res, status);
      expect(errorOf(res).code).toBe(status === 400 ? 'VALIDATION_ERROR' : 'NOT_FOUND');
      expect(errorOf(res).message).toContain(message);
    }
  });

  it('gives 200 parallel generates unique, gap-free display numbers', async () => {
    const body = {
      application_key: keys.tm,
      period_start: '2026-09-01',
      period_end: '2026-09-30',
      line_items: [{ line_type: 'manual', description: 'Retainer fee', quantity: '1', unit_price: '10.00' }],
    };
    const results = await Promise.all(
      Array.from({ length: 200 }, () => call('POST', '/api/v1/invoices/generate', body)),
    );
    for (const r of results) expectStatus(r, 201);
    const numbers = results.map((r) => Number(String(data(r).display_number).slice(4))).sort((a, b) => a - b);
    expect(new Set(numbers).size).toBe(200);
    expect(numbers[199]! - numbers[0]!).toBe(199);
    // Nobody else took a number in between: the stored numbers of the range are exactly ours.
    const [inRange] = await sys.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM invoices WHERE number BETWEEN ? AND ?`,
      [numbers[0], numbers[199]],
    );
    expect(inRange!.n).toBe(200);
  }, 60_000);

  it('lists exactly the list fields, newest number first, filtered and paginated', async () => {
    const res = await call('GET', `/api/v1/invoices?application_key=${keys.tm}&per_page=5&page=2`);
    expectStatus(res, 200);
    const body = res.json() as { data: Json[]; meta: Json };
    expect(body.meta).toEqual({ total: 201, page: 2, per_page: 5 });
    expect(body.data).toHaveLength(5);
    expect(Object.keys(body.data[0]!).sort()).toEqual(
      [
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
      ].sort(),
    );
    const all: Json[] = [];
    for (let page = 1; page <= 3; page++)
      all.push(
        ...data<Json[]>(await call('GET', `/api/v1/invoices?application_key=${keys.tm}&per_page=100&page=${page}`)),
      );
    expect(all).toHaveLength(201);
    const nums = all.map((i) => Number(String(i.display_number).slice(4)));
    expect(nums).toEqual([...nums].sort((a, b) => b - a));
    expect(all.every((i) => i.application_key === keys.tm && i.status === 'draft')).toBe(true);

    const drafts = await call('GET', `/api/v1/invoices?status=draft&application_key=${keys.ret}`);
    expect((drafts.json() as { meta: Json }).meta.total).toBe(1);
    expect((await call('GET', `/api/v1/invoices?status=approved&application_key=${keys.ret}`)).json()).toMatchObject({
      data: [],
      meta: { total: 0, page: 1, per_page: 20 },
    });
    for (const q of ['per_page=101', 'page=0', 'status=paid', 'per_page=x']) {
      const bad = await call('GET', `/api/v1/invoices?${q}`);
      expectStatus(bad, 400);
      expect(errorOf(bad).code).toBe('VALIDATION_ERROR');
    }
  });

  it('answers 404 NOT_FOUND for an unknown id and 400 for a malformed one', async () => {
    const missing = await call('GET', `/api/v1/invoices/${crypto.randomUUID()}`);
    expectStatus(missing, 404);
    expect(errorOf(missing)).toMatchObject({ code: 'NOT_FOUND', message: 'invoice not found' });
    const bad = await call('GET', '/api/v1/invoices/not-a-uuid');
    expectStatus(bad, 400);
    expect(errorOf(bad).code).toBe('VALIDATION_ERROR');
  });
});

describe('OpenAPI', () => {
  it('documents every invoice route with its schemas', async () => {
    const doc = await sys.invoicingHttp({ method: 'GET', url: '/swagger/json' });
    expectStatus(doc, 200);
    const paths = (doc.json() as { paths: Record<string, Record<string, Json>> }).paths;
    expect(
      Object.keys(paths)
        .filter((p) => p.startsWith('/api/v1/invoices'))
        .sort(),
    ).toEqual(
      [
        '/api/v1/invoices',
        '/api/v1/invoices/generate',
        '/api/v1/invoices/generate-bulk',
        '/api/v1/invoices/prefill',
        '/api/v1/invoices/{id}',
        '/api/v1/invoices/{id}/approve',
        '/api/v1/invoices/{id}/decline',
        '/api/v1/invoices/{id}/edit-history',
        '/api/v1/invoices/{id}/finalize',
        '/api/v1/invoices/{id}/pdf',
        '/api/v1/invoices/{id}/line-items',
        '/api/v1/invoices/{id}/preview-html',
        '/api/v1/invoices/{id}/regenerate',
        '/api/v1/invoices/{id}/reject',
        '/api/v1/invoices/{id}/send',
        '/api/v1/invoices/{id}/sync-accounting',
      ].sort(),
    );
    expect(Object.keys(paths['/api/v1/invoices/{id}']!).sort()).toEqual(['get', 'patch']);
  });
});

describe('generate-bulk', () => {
  it('creates a draft per active application, skips and reports those already invoiced, and twice creates nothing', async () => {
    const period = { period_start: '2026-10-01', period_end: '2026-10-31' };
    const countFor = async (): Promise<number> =>
      (
        await sys.sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM invoices WHERE period_start = '2026-10-01' AND period_end = '2026-10-31'`,
        )
      )[0]!.n;
    const first = await call('POST', '/api/v1/invoices/generate-bulk', period);
    expectStatus(first, 200);
    const entries = data<Json[]>(first);
    const mine = (key: string): Json | undefined => entries.find((e) => e.application_key === key);
    // The retainer already had its October invoice (generated above): skipped, with that invoice.
    expect(mine(keys.ret)).toMatchObject({
      status: 'draft',
      skipped: true,
      reason: 'already invoiced for this period',
    });
    expect(mine(keys.tm)).toMatchObject({ status: 'draft', skipped: false, reason: null });
    expect(mine(keys.fix)).toBeUndefined(); // inactive
    const tmDraft = data(await call('GET', `/api/v1/invoices/${String(mine(keys.tm)!.id)}`));
    const tmPreview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: keys.tm, ...period }));
    expect(tmDraft).toMatchObject({ total_amount: '201.88', total_hours: '2.0000' });
    expect(tmDraft.total_amount).toBe(tmPreview.total_amount);

    const before = await countFor();
    const second = await call('POST', '/api/v1/invoices/generate-bulk', period);
    expectStatus(second, 200);
    const again = data<Json[]>(second);
    expect(again.every((e) => e.skipped === true)).toBe(true);
    expect(again.find((e) => e.application_key === keys.tm)!.id).toBe(mine(keys.tm)!.id);
    expect(await countFor()).toBe(before);
  }, 60_000);

  it('creates one draft per application when two bulk runs race', async () => {
    const period = { period_start: '2026-06-01', period_end: '2026-06-30' };
    const runs = await Promise.all([
      call('POST', '/api/v1/invoices/generate-bulk', period),
      call('POST', '/api/v1/invoices/generate-bulk', period),
    ]);
    for (const r of runs) expectStatus(r, 200);
    for (const key of [keys.ret, keys.tm]) {
      const rows = await sys.sql<{ id: string }>(
        `SELECT id FROM invoices WHERE application_key = ? AND period_start = '2026-06-01' AND period_end = '2026-06-30'`,
        [key],
      );
      expect(rows).toHaveLength(1);
      const seen = runs.map((r) => data<Json[]>(r).find((e) => e.application_key === key)!);
      expect(seen.map((e) => e.id)).toEqual([rows[0]!.id, rows[0]!.id]);
      expect(seen.filter((e) => e.skipped === false)).toHaveLength(1);
    }
  }, 60_000);

  it('honours Idempotency-Key and validates the period', async () => {
    const key = `bulk-${tag}`;
    const body = { period_start: '2026-08-01', period_end: '2026-08-31' };
    const a = await call('POST', '/api/v1/invoices/generate-bulk', body, root, { 'idempotency-key': key });
    expectStatus(a, 200);
    const b = await call('POST', '/api/v1/invoices/generate-bulk', body, root, { 'idempotency-key': key });
    expectStatus(b, 200);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.json()).toEqual(a.json());
    const bad = await call('POST', '/api/v1/invoices/generate-bulk', {
      period_start: '2026-08-31',
      period_end: '2026-08-01',
    });
    expectStatus(bad, 400);
    expect(errorOf(bad).message).toContain('body.period_end');
  }, 60_000);
});
