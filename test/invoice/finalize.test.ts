import { jetstream } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { INGEST_SUBJECT } from '../../actors/invoice/analytics/ingest.ts';
import { review } from '../../actors/invoice/invoices/edits.ts';
import { InvoiceReviewChanged } from '../../contracts/domains/invoice.ts';
import { streams } from '../../contracts/streams.ts';
import { publishDurable } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { wireDurableSubject } from '../../platform/namespace.ts';
import { connectNats } from '../../platform/nats.ts';
import { waitForIngest } from '../../scripts/seed/seed-demo.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';
import { errorOf } from '../support/system.ts';
import { pdfText } from './pdf-text.ts';
import { data, expectStatus, useInvoiceFixture, type Json } from './support.ts';

const t = useInvoiceFixture();
const call = t.call;

interface Inv extends Json {
  id: string;
  display_number: string;
  status: string;
  version: number;
}
interface History {
  edit_type: string;
  field_name: string | null;
  old_value: string | null;
  new_value: string | null;
}

async function draft(): Promise<Inv> {
  const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: t.fx.keys.ret }));
  const res = await call('POST', '/api/v1/invoices/generate', preview);
  expectStatus(res, 201);
  return data<Inv>(res);
}
const squash = (s: string): string => s.replace(/\s+/g, '');

describe('finalize and GET pdf', () => {
  it('moves a draft to needs_review with a PDF holding the number, the customer and the total; GET pdf 404 before, the bytes after', async () => {
    const inv = await draft();
    const before = await call('GET', `/api/v1/invoices/${inv.id}/pdf`);
    expectStatus(before, 404);
    expect(errorOf(before).code).toBe('NOT_FOUND');

    const res = await call('POST', `/api/v1/invoices/${inv.id}/finalize`);
    expectStatus(res, 200);
    expect(data<Inv>(res)).toMatchObject({ status: 'needs_review', version: 2 });

    const pdf = await call('GET', `/api/v1/invoices/${inv.id}/pdf`);
    expectStatus(pdf, 200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.headers['content-disposition']).toBe(`inline; filename="${inv.display_number}.pdf"`);
    const bytes = pdf.rawPayload;
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(bytes.subarray(-8).toString('latin1')).toContain('%%EOF');
    const { text, pages } = pdfText(bytes);
    expect(pages).toBe(1);
    const flat = squash(text);
    expect(flat).toContain(squash(inv.display_number));
    expect(flat).toContain(squash('Acme <Logistics> GmbH'));
    expect(flat).toContain('€2,300.00');
    // Printed at the finalized state: no draft mark.
    expect(flat).not.toContain('Draft');

    const h = data<History[]>(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`));
    expect(h.map((e) => [e.edit_type, e.field_name, e.old_value])).toEqual([
      ['status_change', 'status', 'draft'],
      ['pdf_rendered', 'pdf', null],
    ]);
    expect(h[1]!.new_value).toMatch(new RegExp(`^sha256:[0-9a-f]{64} bytes:${bytes.length}$`));
  });

  it('serves a PDF larger than the default 1 MB NATS message limit (a 700-line invoice)', async () => {
    const preview = data<Json & { line_items: Json[] }>(
      await call('POST', '/api/v1/invoices/prefill', { application_key: t.fx.keys.ret }),
    );
    const extra = Array.from({ length: 700 }, (_, i) => ({
      line_type: 'manual',
      description: `Consulting session ${i + 1}: review and follow-up`,
      quantity: '1.5000',
      unit_price: '120.00',
    }));
    const res = await call('POST', '/api/v1/invoices/generate', {
      ...preview,
      line_items: [...preview.line_items, ...extra],
      total_amount: undefined,
      base_amount: undefined,
      total_hours: undefined,
      overtime_hours: undefined,
      overtime_amount: undefined,
      is_overtime: undefined,
    });
    expectStatus(res, 201);
    const inv = data<Inv>(res);
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    const pdf = await call('GET', `/api/v1/invoices/${inv.id}/pdf`);
    expectStatus(pdf, 200);
    // Base64 in one NATS reply: over 1 MB on the wire, within the project's configured 8 MB.
    expect(Math.ceil((pdf.rawPayload.length * 4) / 3)).toBeGreaterThan(1024 * 1024);
    expect(pdf.rawPayload.subarray(0, 5).toString('latin1')).toBe('%PDF-');
  });

  it('answers 409 on a second finalize and on any status but draft; the PDF stays as it was', async () => {
    const inv = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    const first = (await call('GET', `/api/v1/invoices/${inv.id}/pdf`)).rawPayload;
    const again = await call('POST', `/api/v1/invoices/${inv.id}/finalize`);
    expectStatus(again, 409);
    expect(errorOf(again)).toMatchObject({
      code: 'CONFLICT',
      message: 'only a draft can be finalized; this invoice is needs_review',
    });
    for (const status of ['approved', 'rejected', 'declined', 'sent']) {
      await t.sys.sql(`UPDATE invoices SET status = ? WHERE id = ?`, [status, inv.id]);
      expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 409);
    }
    expect((await call('GET', `/api/v1/invoices/${inv.id}/pdf`)).rawPayload.equals(first)).toBe(true);
  });

  it('two finalizes at once give one 200, one 409 and one PDF (the row lock)', async () => {
    const inv = await draft();
    const results = await Promise.all([
      call('POST', `/api/v1/invoices/${inv.id}/finalize`),
      call('POST', `/api/v1/invoices/${inv.id}/finalize`),
    ]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    const rows = await t.sys.sql<{ n: number; version: number }>(
      `SELECT count(*)::int AS n, max(invoice_version) AS version FROM invoice_pdfs WHERE invoice_id = ?`,
      [inv.id],
    );
    expect(rows[0]).toMatchObject({ n: 1, version: 2 });
    const h = data<History[]>(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`));
    expect(h.filter((e) => e.edit_type === 'status_change')).toHaveLength(1);
  });

  it('prints the html_override when set (what the preview shows is what the PDF holds)', async () => {
    const inv = await draft();
    expectStatus(
      await call('PATCH', `/api/v1/invoices/${inv.id}`, {
        html_override:
          '<html><body><h1>Custom invoice OVR-77</h1><script>document.body.textContent = "ran"</script></body></html>',
      }),
      200,
    );
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    const flat = squash(pdfText((await call('GET', `/api/v1/invoices/${inv.id}/pdf`)).rawPayload).text);
    expect(flat).toContain('CustominvoiceOVR-77');
    // JavaScript is off while printing: the override's script did not run.
    expect(flat).not.toContain('ran');
  });

  it('answers 404 for unknown ids and 400 for malformed ones', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expectStatus(await call('POST', `/api/v1/invoices/${unknown}/finalize`), 404);
    const pdf = await call('GET', `/api/v1/invoices/${unknown}/pdf`);
    expectStatus(pdf, 404);
    expect(errorOf(pdf).message).toBe('invoice not found');
    expectStatus(await call('POST', '/api/v1/invoices/x/finalize'), 400);
    expectStatus(await call('GET', '/api/v1/invoices/x/pdf'), 400);
  });
});

interface Line extends Json {
  id: string;
  line_type: string;
  description: string;
  source: string;
  line_total: string;
  sort_order: number;
}

describe('PUT regenerate', () => {
  /** A finalized retainer draft with a manual line and an edited automatic task line, moved to `status`. */
  async function reviewed(
    action: 'approve' | 'reject' | 'decline',
  ): Promise<{ inv: Inv & { line_items: Line[] }; editedId: string }> {
    const inv = await draft();
    const task = (inv as Inv & { line_items: Line[] }).line_items.find((l) => l.line_type === 'task')!;
    const edited = await call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, {
      add: [{ line_type: 'manual', description: 'Travel to the customer', quantity: '1', unit_price: '80.00' }],
      update: [{ id: task.id, description: 'Renamed by hand' }],
    });
    expectStatus(edited, 200);
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/${action}`, { comment: 'looked at it' }), 200);
    return {
      inv: data<Inv & { line_items: Line[] }>(await call('GET', `/api/v1/invoices/${inv.id}`)),
      editedId: task.id,
    };
  }

  let n = 0;
  /** New October work arrives in the analytics store: one more standard hour on the retainer → +1 h overtime, +120.00. */
  async function newWork(): Promise<void> {
    n++;
    await publishDurable(t.sys.nc, INGEST_SUBJECT, {
      batch_id: `regen-${t.fx.tag}-${n}`,
      worklogs: [
        {
          worklog_id: `wl-${t.fx.tag}-regen-${n}`,
          application_key: t.fx.keys.ret,
          tracker_key: 'X-3',
          description: 'Late October fix',
          author: 'ben',
          worklog_date: '2026-10-20',
          time_seconds: 3600,
          billable_seconds: 3600,
          rate_tier: t.fx.keys.std,
        },
      ],
    });
    await waitForIngest(t.sys.nc, 20_000);
  }

  for (const [action, status] of [
    ['approve', 'approved'],
    ['reject', 'rejected'],
    ['decline', 'declined'],
  ] as const) {
    it(`from ${status}: back to draft with fresh analytics data; manual lines survive, edited automatic lines are replaced; version, history, PDF gone`, async () => {
      const { inv, editedId } = await reviewed(action);
      // Each case adds one more hour: the draft starts from what earlier cases ingested.
      const hours = 2 + n;
      const overtime = 300 + 120 * n;
      const money = (v: number): string => `${v}.00`;
      expect(inv).toMatchObject({ status, total_amount: money(2080 + overtime) });
      await newWork();
      const res = await call('PUT', `/api/v1/invoices/${inv.id}/regenerate`);
      expectStatus(res, 200);
      const out = data<Inv & { line_items: Line[]; total_amount: string; overtime_amount: string }>(res);
      // 2000 base + the overtime with one more standard hour (120.00) + 80 travel.
      expect(out).toMatchObject({
        status: 'draft',
        version: inv.version + 1,
        overtime_amount: money(overtime + 120),
        total_amount: money(2080 + overtime + 120),
      });
      expect(out.line_items.filter((l) => l.source === 'manual').map((l) => [l.description, l.line_total])).toEqual([
        ['Travel to the customer', '80.00'],
      ]);
      expect(out.line_items.at(-1)!.description).toBe('Travel to the customer');
      expect(out.line_items.some((l) => l.description === 'Renamed by hand')).toBe(false);
      // One task line per (tracker key, tier): the new worklogs of X-3 are one line.
      expect(out.line_items.filter((l) => l.tracker_key === 'X-3')).toHaveLength(1);
      expect(out.line_items.map((l) => l.sort_order)).toEqual(out.line_items.map((_, i) => i));
      expectStatus(await call('GET', `/api/v1/invoices/${inv.id}/pdf`), 404);
      const h = data<History[]>(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`));
      const tail = h.slice(h.findIndex((e) => e.edit_type === 'status_change' && e.new_value === 'draft'));
      expect(tail[0]).toMatchObject({ edit_type: 'status_change', old_value: status, new_value: 'draft' });
      expect(JSON.parse(tail[1]!.new_value!)).toMatchObject({ kept_manual: 1, replaced_edited_lines: [editedId] });
      expect(
        tail.filter((e) => e.edit_type === 'recalculated').map((e) => [e.field_name, e.old_value, e.new_value]),
      ).toEqual([
        ['overtime_hours', `${hours}.0000`, `${hours + 1}.0000`],
        ['overtime_amount', money(overtime), money(overtime + 120)],
        ['total_amount', money(2080 + overtime), money(2200 + overtime)],
        ['total_hours', `${10 + hours}.0000`, `${11 + hours}.0000`],
      ]);
      // A regenerated draft is a draft again: it can be finalized anew.
      expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    });
  }

  it('answers 409 from draft, needs_review and sent, 404 for an unknown id, 400 for a malformed one', async () => {
    const inv = await draft();
    for (const status of ['draft', 'needs_review', 'sent']) {
      await t.sys.sql(`UPDATE invoices SET status = ? WHERE id = ?`, [status, inv.id]);
      const res = await call('PUT', `/api/v1/invoices/${inv.id}/regenerate`);
      expectStatus(res, 409);
      expect(errorOf(res).code).toBe('CONFLICT');
    }
    expectStatus(await call('PUT', '/api/v1/invoices/00000000-0000-4000-8000-000000000000/regenerate'), 404);
    expectStatus(await call('PUT', '/api/v1/invoices/x/regenerate'), 400);
  });
});

const decoder = new TextDecoder();

/**
 * Every review event of `invoiceId` in the stream, oldest first. A move publishes (and waits for the stream's ack)
 * before it answers, so what a move announced is in the stream once its reply is in: no waiting for delivery.
 */
async function reviewEvents(invoiceId: string): Promise<InvoiceReviewChanged[]> {
  const consumer = await jetstream(t.sys.nc).consumers.get(streams.SVC_EVENTS.name, {
    filter_subjects: wireDurableSubject('svc.evt.invoice.review'),
  });
  const out: InvoiceReviewChanged[] = [];
  try {
    for (;;) {
      // Wide: an empty read costs this long, a loaded machine can be slow to deliver the first message.
      const m = await consumer.next({ expires: 5_000 });
      if (!m) break;
      const e = InvoiceReviewChanged.parse(JSON.parse(decoder.decode(m.data)));
      if (e.invoice_id === invoiceId) out.push(e);
      if (m.info.pending === 0) break;
    }
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  return out;
}

describe('svc.evt.invoice.review', () => {
  const at = (): string => new Date(t.sys.clock.now()).toISOString();

  it('finalize announces one needs_review event with the invoice, the version it made and the editor', async () => {
    const inv = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    expect(await reviewEvents(inv.id)).toEqual([
      {
        invoice_id: inv.id,
        display_number: inv.display_number,
        application_key: t.fx.keys.ret,
        customer_key: t.fx.keys.cust,
        period_start: '2026-10-01',
        period_end: '2026-10-31',
        total_amount: inv.total_amount,
        currency: 'EUR',
        status: 'needs_review',
        previous_status: 'draft',
        version: 2,
        by: t.fx.rootEmail,
        comment: null,
        at: at(),
      },
    ]);
  });

  it('approve announces approved from needs_review by the editor; send announces nothing', async () => {
    const inv = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/approve`), 200);
    const sent = await call('POST', `/api/v1/invoices/${inv.id}/send`);
    expectStatus(sent, 200);
    expect(data<Inv>(sent)).toMatchObject({ status: 'sent', version: 4 });
    const events = await reviewEvents(inv.id);
    expect(events.map((e) => [e.status, e.previous_status, e.version])).toEqual([
      ['needs_review', 'draft', 2],
      ['approved', 'needs_review', 3],
    ]);
    expect(events[1]).toMatchObject({
      display_number: inv.display_number,
      total_amount: inv.total_amount,
      currency: 'EUR',
      by: t.fx.rootEmail,
      comment: null,
      at: at(),
    });
  });

  it('reject carries its comment; decline without one carries null', async () => {
    const rejected = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${rejected.id}/finalize`), 200);
    expectStatus(
      await call('POST', `/api/v1/invoices/${rejected.id}/reject`, { comment: 'the overtime looks wrong' }),
      200,
    );
    expect((await reviewEvents(rejected.id)).at(-1)).toMatchObject({
      status: 'rejected',
      previous_status: 'needs_review',
      version: 3,
      by: t.fx.rootEmail,
      comment: 'the overtime looks wrong',
    });

    const declined = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${declined.id}/finalize`), 200);
    expectStatus(await call('POST', `/api/v1/invoices/${declined.id}/decline`), 200);
    expect((await reviewEvents(declined.id)).at(-1)).toMatchObject({
      status: 'declined',
      previous_status: 'needs_review',
      version: 3,
      comment: null,
    });
  });

  it('a refused move (approve a draft: 409) announces nothing', async () => {
    const inv = await draft();
    const res = await call('POST', `/api/v1/invoices/${inv.id}/approve`);
    expectStatus(res, 409);
    expect(errorOf(res).code).toBe('CONFLICT');
    expect(await reviewEvents(inv.id)).toEqual([]);
  });

  it('a publish that fails rolls the move back: the invoice, its history and the stream stay as they were', async () => {
    const inv = await draft();
    expectStatus(await call('POST', `/api/v1/invoices/${inv.id}/finalize`), 200);
    const historyBefore = data<History[]>(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`));
    // A closed connection refuses every publish at once.
    const closed = await connectNats(NATS_URL, 'invoice-review-test', createLogger('silent'), NATS_CREDS, NATS_CA);
    await closed.close();
    const orm = await t.sys.stores.orm();
    await expect(
      orm.em
        .fork()
        .transactional((tx) =>
          review(
            tx,
            { id: inv.id, action: 'approve', comment: 'fine' },
            { editor: 'test', nc: closed, clock: t.sys.clock },
          ),
        ),
    ).rejects.toMatchObject({ name: 'ClosedConnectionError' });
    expect(data<Inv>(await call('GET', `/api/v1/invoices/${inv.id}`))).toMatchObject({
      status: 'needs_review',
      version: 2,
    });
    expect(data<History[]>(await call('GET', `/api/v1/invoices/${inv.id}/edit-history`))).toEqual(historyBefore);
    expect((await reviewEvents(inv.id)).map((e) => e.status)).toEqual(['needs_review']);
  });
});
