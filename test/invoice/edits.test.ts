import { describe, expect, it } from 'vitest';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import { errorOf } from '../support/system.ts';
import { data, expectStatus, useInvoiceFixture, type Json } from './support.ts';

const t = useInvoiceFixture();
const call = t.call;

interface Line extends Json {
  id: string;
  line_type: string;
  description: string;
  quantity: string;
  unit_price: string;
  line_total: string;
}
interface Inv extends Json {
  id: string;
  version: number;
  status: string;
  total_amount: string;
  line_items: Line[];
}
interface History {
  edit_type: string;
  field_name: string | null;
  old_value: string | null;
  new_value: string | null;
  edited_by: string;
  line_item_id: string | null;
  invoice_id: string;
}

/** A fresh retainer draft of October 2026 (2300.00, see invoices.test.ts) from its preview. */
async function draft(): Promise<Inv> {
  const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: t.fx.keys.ret }));
  const res = await call('POST', '/api/v1/invoices/generate', preview);
  expectStatus(res, 201);
  return data<Inv>(res);
}
const cents = (inv: Inv): string =>
  (inv.line_items.reduce((s, l) => s + Math.round(Number(l.line_total) * 100), 0) / 100).toFixed(2);
const history = async (id: string): Promise<History[]> =>
  data<History[]>(await call('GET', `/api/v1/invoices/${id}/edit-history`));
const setStatus = (id: string, status: string): Promise<unknown> =>
  t.sys.sql(`UPDATE invoices SET status = ? WHERE id = ?`, [status, id]);

describe('PATCH invoice', () => {
  it('changes the editable fields of a draft, bumps the version once per change and records each field', async () => {
    const inv = await draft();
    const res = await call('PATCH', `/api/v1/invoices/${inv.id}`, {
      show_task_list: false,
      legal_text: 'Payable within 30 days.',
      invoice_date: '2026-11-20',
      html_override: '<p>custom</p>',
    });
    expectStatus(res, 200);
    expect(data<Inv>(res)).toMatchObject({
      version: 2,
      show_task_list: false,
      legal_text: 'Payable within 30 days.',
      invoice_date: '2026-11-20',
      html_override: '<p>custom</p>',
      total_amount: '2300.00',
    });
    const cleared = data<Inv>(
      await call('PATCH', `/api/v1/invoices/${inv.id}`, { html_override: null, show_task_list: false }),
    );
    expect(cleared).toMatchObject({ version: 3, html_override: null, show_task_list: false });
    const same = data<Inv>(
      await call('PATCH', `/api/v1/invoices/${inv.id}`, { legal_text: 'Payable within 30 days.' }),
    );
    expect(same.version).toBe(3);
    const h = await history(inv.id);
    expect(h.map((e) => [e.edit_type, e.field_name, e.old_value, e.new_value])).toEqual([
      ['invoice_update', 'invoice_date', '2026-11-15', '2026-11-20'],
      ['invoice_update', 'show_task_list', 'true', 'false'],
      ['invoice_update', 'legal_text', '', 'Payable within 30 days.'],
      ['invoice_update', 'html_override', null, '<p>custom</p>'],
      ['invoice_update', 'html_override', '<p>custom</p>', null],
    ]);
    expect(h.every((e) => e.edited_by === t.fx.rootEmail && e.invoice_id === inv.id && e.line_item_id === null)).toBe(
      true,
    );
  });

  it('edits amounts through the lines, so the lines still add up to the invoice to the cent', async () => {
    const inv = await draft();
    const base = data<Inv>(await call('PATCH', `/api/v1/invoices/${inv.id}`, { base_amount: '2500.00' }));
    expect(base).toMatchObject({ version: 2, base_amount: '2500.00', total_amount: '2800.00' });
    expect(
      base.line_items.filter((l) => l.line_type === 'base').map((l) => [l.quantity, l.unit_price, l.line_total]),
    ).toEqual([['1.0000', '2500.00', '2500.00']]);
    const ot = data<Inv>(
      await call('PATCH', `/api/v1/invoices/${inv.id}`, { overtime_hours: '3.0000', overtime_amount: '100.00' }),
    );
    // One overtime line: 3 h at 100/3 = 33.333333 → 99.999999 → 100.00
    expect(
      ot.line_items.filter((l) => l.line_type === 'overtime').map((l) => [l.quantity, l.unit_price, l.line_total]),
    ).toEqual([['3.0000', '33.333333', '100.00']]);
    expect(ot).toMatchObject({
      overtime_hours: '3.0000',
      overtime_amount: '100.00',
      total_amount: '2600.00',
      is_overtime: true,
      version: 3,
    });
    const total = data<Inv>(await call('PATCH', `/api/v1/invoices/${inv.id}`, { total_amount: '2599.99' }));
    expect(total.line_items.at(-1)).toMatchObject({
      line_type: 'manual',
      description: 'Adjustment',
      quantity: '1.0000',
      unit_price: '-0.01',
      line_total: '-0.01',
      source: 'manual',
      is_auto_generated: false,
    });
    expect(total.total_amount).toBe('2599.99');
    for (const i of [base, ot, total]) expect(cents(i)).toBe(i.total_amount);

    const bad = await call('PATCH', `/api/v1/invoices/${inv.id}`, { is_overtime: false });
    expectStatus(bad, 400);
    expect(errorOf(bad)).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(errorOf(bad).message).toContain('body.is_overtime');
    const noHours = await call('PATCH', `/api/v1/invoices/${inv.id}`, { overtime_hours: '0', overtime_amount: '5.00' });
    expectStatus(noHours, 400);
    expect(errorOf(noHours).message).toContain('body.overtime_amount');
    expect(data<Inv>(await call('GET', `/api/v1/invoices/${inv.id}`)).version).toBe(4);
    const kinds = (await history(inv.id)).map((e) => `${e.edit_type}:${e.field_name ?? ''}`);
    expect(kinds).toContain('invoice_update:base_amount');
    expect(kinds).toContain('recalculated:total_amount');
    expect(kinds).toContain('line_add:');
  });

  it('refuses unknown fields, wrong types, a stale version (409) and anything but a draft (409)', async () => {
    const inv = await draft();
    for (const [body, field] of [
      [{ status: 'sent' }, 'status'],
      [{ base_amount: 12.5 }, 'body.base_amount'],
      [{ invoice_date: '2026-13-01' }, 'body.invoice_date'],
      [{ show_overtime: 'yes' }, 'body.show_overtime'],
    ] as const) {
      const res = await call('PATCH', `/api/v1/invoices/${inv.id}`, body);
      expectStatus(res, 400);
      expect(errorOf(res).message).toContain(field);
    }
    const stale = await call('PATCH', `/api/v1/invoices/${inv.id}`, { legal_text: 'x', version: 7 });
    expectStatus(stale, 409);
    expect(errorOf(stale)).toMatchObject({ code: 'CONFLICT' });
    expectStatus(await call('PATCH', `/api/v1/invoices/${inv.id}`, { legal_text: 'x', version: 1 }), 200);
    expectStatus(await call('PATCH', `/api/v1/invoices/${crypto.randomUUID()}`, { legal_text: 'x' }), 404);
    await setStatus(inv.id, 'needs_review');
    const locked = await call('PATCH', `/api/v1/invoices/${inv.id}`, { legal_text: 'y' });
    expectStatus(locked, 409);
    expect(errorOf(locked).message).toContain('only a draft');
    expectStatus(
      await call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, { remove: [inv.line_items[0]!.id] }),
      409,
    );
  });
});

describe('PATCH line-items', () => {
  it('applies add, update and remove in one request; only supplied fields change; totals follow', async () => {
    const inv = await draft();
    const base = inv.line_items.find((l) => l.line_type === 'base')!;
    const task = inv.line_items.find((l) => l.line_type === 'task')!;
    const overtime = inv.line_items.filter((l) => l.line_type === 'overtime');
    const res = await call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, {
      add: [
        { line_type: 'manual', description: 'Travel', quantity: '2', unit_price: '37.125' }, // 74.25
        { line_type: 'manual', description: 'Discount', quantity: '1', unit_price: '-0.005' }, // -0.005 → -0.01
      ],
      update: [
        { id: task.id, description: 'Renamed task' },
        { id: base.id, unit_price: '1999.995' }, // 1999.995 → 2000.00 (half-up)
      ],
      remove: [overtime[1]!.id],
    });
    expectStatus(res, 200);
    const after = data<Inv>(res);
    expect(after.version).toBe(2);
    const updatedTask = after.line_items.find((l) => l.id === task.id)!;
    expect(updatedTask).toEqual({ ...task, description: 'Renamed task' });
    expect(after.line_items.find((l) => l.id === base.id)).toMatchObject({
      unit_price: '1999.995',
      line_total: '2000.00',
    });
    expect(after.line_items.some((l) => l.id === overtime[1]!.id)).toBe(false);
    const added = after.line_items.filter((l) => l.source === 'manual');
    expect(added.map((l) => [l.description, l.line_total, l.sort_order])).toEqual([
      ['Travel', '74.25', 6],
      ['Discount', '-0.01', 7],
    ]);
    expect(added.every((l) => typeof l.id === 'string' && !inv.line_items.some((o) => o.id === l.id))).toBe(true);
    // 2000.00 + 120.00 (one overtime line left) + 74.25 - 0.01
    expect(after).toMatchObject({
      total_amount: '2194.24',
      overtime_amount: '120.00',
      overtime_hours: '1.0000',
      base_amount: '2000.00',
    });
    expect(cents(after)).toBe(after.total_amount);
    const h = await history(inv.id);
    expect(
      h
        .filter((e) => e.edit_type === 'line_update')
        .map((e) => [e.line_item_id, e.field_name, e.old_value, e.new_value]),
    ).toEqual([
      [task.id, 'description', task.description, 'Renamed task'],
      [base.id, 'unit_price', '2000.00', '1999.995'],
    ]);
    expect(h.filter((e) => e.edit_type === 'line_remove').map((e) => e.line_item_id)).toEqual([overtime[1]!.id]);
    expect(h.filter((e) => e.edit_type === 'line_add')).toHaveLength(2);
    expect(
      h.filter((e) => e.edit_type === 'recalculated').map((e) => [e.field_name, e.old_value, e.new_value]),
    ).toEqual([
      ['overtime_hours', '2.0000', '1.0000'],
      ['overtime_amount', '300.00', '120.00'],
      ['total_amount', '2300.00', '2194.24'],
    ]);
  });

  it('changes nothing when any part fails: unknown line 404, inconsistent total 400, duplicate ids 400', async () => {
    const inv = await draft();
    const task = inv.line_items.find((l) => l.line_type === 'task')!;
    const cases: [Json, number, string][] = [
      [
        {
          add: [{ line_type: 'manual', description: 'x', quantity: '1', unit_price: '1' }],
          remove: [crypto.randomUUID()],
        },
        404,
        'not found on this invoice',
      ],
      [{ update: [{ id: task.id, quantity: '2', line_total: '1.00' }] }, 400, 'body.update.0.line_total'],
      [{ update: [{ id: task.id, description: 'y' }], remove: [task.id] }, 400, 'body.update'],
      [{ update: [{ id: task.id, source: 'manual' }] }, 400, 'source'],
      [
        { add: [{ line_type: 'manual', description: '', quantity: '1', unit_price: '1' }] },
        400,
        'body.add.0.description',
      ],
      [
        { add: [{ line_type: 'manual', description: 'z', quantity: '1.00001', unit_price: '1' }] },
        400,
        'body.add.0.quantity',
      ],
    ];
    for (const [body, status, message] of cases) {
      const res = await call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, body);
      expectStatus(res, status);
      expect(errorOf(res).message).toContain(message);
    }
    expect(data<Inv>(await call('GET', `/api/v1/invoices/${inv.id}`))).toEqual(inv);
    expect(await history(inv.id)).toEqual([]);
  });

  it('loses no update under 20 parallel line-item edits of one invoice', async () => {
    const inv = await draft();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, {
          add: [{ line_type: 'manual', description: `Parallel ${i}`, quantity: '1', unit_price: '1.01' }],
        }),
      ),
    );
    for (const r of results) expectStatus(r, 200);
    const after = data<Inv>(await call('GET', `/api/v1/invoices/${inv.id}`));
    expect(after.version).toBe(21);
    expect(after.line_items.filter((l) => l.description.startsWith('Parallel '))).toHaveLength(20);
    expect(after.total_amount).toBe('2320.20');
    expect(cents(after)).toBe(after.total_amount);
    expect(new Set(results.map((r) => data<Inv>(r).version)).size).toBe(20);
    expect((await history(inv.id)).filter((e) => e.edit_type === 'line_add')).toHaveLength(20);
  }, 60_000);
});

describe('review states', () => {
  it('moves needs_review → approved → sent, records each move, and answers 409 from any other state', async () => {
    const inv = await draft();
    const early = await call('POST', `/api/v1/invoices/${inv.id}/approve`);
    expectStatus(early, 409);
    expect(errorOf(early)).toMatchObject({
      code: 'CONFLICT',
      message: 'approve needs an invoice in needs_review; this one is draft',
    });
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/send`), 409);
    // finalize (draft → needs_review) is not built yet: the test puts the invoice there itself.
    await setStatus(inv.id, 'needs_review');
    const approved = await call('POST', `/api/v1/invoices/${inv.id}/approve`, { comment: 'Looks right' });
    expectStatus(approved, 200);
    expect(data<Inv>(approved)).toMatchObject({ status: 'approved', version: 2 });
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/reject`), 409);
    const sent = await call('POST', `/api/v1/invoices/${inv.id}/send`);
    expect(data<Inv>(sent)).toMatchObject({ status: 'sent', version: 3 });
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/send`), 409);
    expect((await history(inv.id)).map((e) => [e.edit_type, e.field_name, e.old_value, e.new_value])).toEqual([
      ['status_change', 'status', 'needs_review', 'approved'],
      ['review_comment', 'comment', null, 'Looks right'],
      ['status_change', 'status', 'approved', 'sent'],
    ]);

    for (const [action, to] of [
      ['reject', 'rejected'],
      ['decline', 'declined'],
    ] as const) {
      const other = await draft();
      await setStatus(other.id, 'needs_review');
      expect(data<Inv>(await call('POST', `/api/v1/invoices/${other.id}/${action}`))).toMatchObject({ status: to });
      expectStatus(await call('POST', `/api/v1/invoices/${other.id}/approve`), 409);
    }
    expectStatus(await call('POST', `/api/v1/invoices/${crypto.randomUUID()}/approve`), 404);
    const long = await call('POST', `/api/v1/invoices/${inv.id}/approve`, { comment: 'x'.repeat(2001) });
    expectStatus(long, 400);
    expect(errorOf(long).message).toContain('body.comment');
  });

  it('needs invoices:review for review moves and invoices:write for edits', async () => {
    const inv = await draft();
    await setStatus(inv.id, 'needs_review');
    const roleId = crypto.randomUUID();
    await t.sys.sql(`INSERT INTO roles (id, name, permissions) VALUES (?, ?, ?::text[])`, [
      roleId,
      `Invoice reader ${t.fx.tag}`,
      '{invoices:read}',
    ]);
    const client = await createClient(t.sys);
    const reader = await createUser(t.sys);
    await assignRole(t.sys, reader.id, client.id, roleId);
    const token = await tokenFor(t.sys, reader);
    expectStatus(await call('GET', `/api/v1/invoices/${inv.id}`, undefined, token), 200);
    expectStatus(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`, undefined, token), 200);
    const approve = await call('POST', `/api/v1/invoices/${inv.id}/approve`, undefined, token);
    expectStatus(approve, 403);
    expect(errorOf(approve)).toMatchObject({ code: 'FORBIDDEN', message: 'missing permission invoices:review' });
    expectStatus(await call('PATCH', `/api/v1/invoices/${inv.id}`, { legal_text: 'x' }, token), 403);
    expectStatus(await call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, {}, token), 403);
    expectStatus(await call('GET', `/api/v1/invoices/${crypto.randomUUID()}/edit-history`), 404);
  });
});
