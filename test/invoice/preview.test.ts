import { describe, expect, it } from 'vitest';
import { errorOf } from '../support/system.ts';
import { data, expectStatus, useInvoiceFixture, type Json } from './support.ts';

const t = useInvoiceFixture();
const call = t.call;

interface Line extends Json {
  id: string;
  line_type: string;
}
interface Inv extends Json {
  id: string;
  display_number: string;
  line_items: Line[];
}

/** A retainer draft of October 2026 (base 2000.00, tasks X-1 8 h and X-2 4 h, overtime 2 h → 2300.00). */
async function draft(): Promise<Inv> {
  const preview = data(await call('POST', '/api/v1/invoices/prefill', { application_key: t.fx.keys.ret }));
  const res = await call('POST', '/api/v1/invoices/generate', preview);
  expectStatus(res, 201);
  return data<Inv>(res);
}
const html = async (id: string): Promise<string> => {
  const res = await call('GET', `/api/v1/invoices/${id}/preview-html`);
  expectStatus(res, 200);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  return res.body;
};
const patch = async (id: string, body: Json): Promise<void> =>
  expectStatus(await call('PATCH', `/api/v1/invoices/${id}`, body), 200);
/** The visible text of the line table's rows (tags dropped, whitespace collapsed). */
const rows = (page: string): string[] =>
  [...(page.split('<tbody>')[1] ?? '').split('</tbody>')[0]!.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) =>
    m[1]!
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
  );

describe('GET preview-html', () => {
  it('renders the template: seller, customer, number, dates, period, lines and totals formatted from the decimal strings', async () => {
    const inv = await draft();
    const page = await html(inv.id);
    expect(page).toContain(`<title>Invoice ${inv.display_number}</title>`);
    expect(page).toContain('Example Services Ltd');
    // The fixture's customer is "Acme <Logistics> GmbH": escaped, never markup.
    expect(page).toContain('Acme &lt;Logistics&gt; GmbH');
    expect(page).toContain('Hafenstraße 12, Hamburg');
    expect(page).toContain('15 November 2026');
    expect(page).toContain('1 October 2026 – 31 October 2026');
    expect(page).toContain('€2,300.00');
    expect(rows(page)[0]).toBe(`Retainer: App ${t.fx.keys.ret} 1.00 €2,000.00 €2,000.00`);
    expect(rows(page).some((r) => r.startsWith('Work on X-1 X-1 8:00 8.00'))).toBe(true);
    expect(page).toMatch(/Overtime \(2\.00 h\)<\/td><td class="num">€300\.00/);
    expect(page).toContain('Draft');
  });

  it('escapes every value: a <script> in a description and a customer name with & < > " \' stay text', async () => {
    const inv = await draft();
    const res = await call('PATCH', `/api/v1/invoices/${inv.id}/line-items`, {
      add: [
        {
          line_type: 'manual',
          description: `<script>alert("x")</script> & 'quoted'`,
          quantity: '1',
          unit_price: '10.00',
        },
      ],
    });
    expectStatus(res, 200);
    await t.sys.sql(
      `UPDATE invoices SET customer_snapshot = jsonb_set(customer_snapshot, '{name}', to_jsonb(?::text)) WHERE id = ?`,
      [`Tom & Jerry <b>"Ltd"</b> 'x'`, inv.id],
    );
    await patch(inv.id, { legal_text: '<img src=x onerror=alert(1)>' });
    const page = await html(inv.id);
    expect(page).not.toContain('<script>alert');
    expect(page).not.toContain('<img');
    expect(page).not.toContain('<b>');
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;quoted&#x27;');
    expect(page).toContain('Tom &amp; Jerry &lt;b&gt;&quot;Ltd&quot;&lt;/b&gt; &#x27;x&#x27;');
    expect(page).toContain('&lt;img src&#x3D;x onerror&#x3D;alert(1)&gt;');
  });

  it('honours show_task_list: off, the task lines collapse into one Services row', async () => {
    const inv = await draft();
    await patch(inv.id, { show_task_list: false });
    const r = rows(await html(inv.id));
    expect(r.some((x) => x.startsWith('Work on'))).toBe(false);
    expect(r).toContain('Services (3 tasks) 12:00 12.00 €0.00');
  });

  it('honours show_tracked_time: off, no time column, no task hours, no total hours', async () => {
    const inv = await draft();
    const on = await html(inv.id);
    expect(on).toContain('<th class="num">Time</th>');
    expect(on).toContain('Total hours');
    await patch(inv.id, { show_tracked_time: false });
    const page = await html(inv.id);
    expect(page).not.toContain('<th class="num">Time</th>');
    expect(page).not.toContain('Total hours');
    expect(rows(page).find((x) => x.startsWith('Work on X-1'))).toBe('Work on X-1 X-1 €0.00 €0.00');
  });

  it('honours show_task_pricing: off, task rows carry no price or amount while the total stays', async () => {
    const inv = await draft();
    await patch(inv.id, { show_task_pricing: false });
    const page = await html(inv.id);
    expect(rows(page).find((x) => x.startsWith('Work on X-1'))).toBe('Work on X-1 X-1 8:00 8.00');
    expect(page).toContain('€2,300.00');
  });

  it('honours show_overtime: off, the overtime is one amount-only row and the summary has no overtime row', async () => {
    const inv = await draft();
    const on = await html(inv.id);
    expect(rows(on).some((x) => x.startsWith('Overtime'))).toBe(true);
    await patch(inv.id, { show_overtime: false });
    const page = await html(inv.id);
    expect(rows(page).some((x) => x.startsWith('Overtime'))).toBe(false);
    expect(rows(page)).toContain('Additional services €300.00');
    expect(page).not.toMatch(/Overtime \(/);
    expect(page).toContain('€2,300.00');
  });

  it('honours invoice_date and legal_text', async () => {
    const inv = await draft();
    const before = await html(inv.id);
    expect(before).not.toContain('class="legal"');
    await patch(inv.id, { invoice_date: '2026-12-01', legal_text: 'Payable within 30 days.\nIBAN DE00 1234' });
    const page = await html(inv.id);
    expect(page).toContain('1 December 2026');
    expect(page).not.toContain('15 November 2026');
    expect(page).toContain('<div class="legal">Payable within 30 days.\nIBAN DE00 1234</div>');
  });

  it('returns the html_override as is, byte for byte, and the template again once it is cleared', async () => {
    const inv = await draft();
    const override = `<!doctype html><p data-x='1'>Custom & "raw" <script>/* kept as is */</script> €</p>`;
    await patch(inv.id, { html_override: override });
    const res = await call('GET', `/api/v1/invoices/${inv.id}/preview-html`);
    expectStatus(res, 200);
    expect(res.body).toBe(override);
    // Served sandboxed: the user's HTML cannot run script on the API's origin.
    expect(res.headers['content-security-policy']).toContain('sandbox');
    await patch(inv.id, { html_override: null });
    expect(await html(inv.id)).toContain(inv.display_number);
  });

  it('keeps its own sandbox policy and may be framed, with the rest of the API profile', async () => {
    const res = await call('GET', `/api/v1/invoices/${(await draft()).id}/preview-html`);
    expectStatus(res, 200);
    expect(res.headers['content-security-policy']).toBe(
      "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:",
    );
    expect(res.headers['x-frame-options']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
  });

  it('answers 404 for an unknown id, 400 for a malformed one, 401 without a token', async () => {
    const unknown = await call('GET', '/api/v1/invoices/00000000-0000-4000-8000-000000000000/preview-html');
    expectStatus(unknown, 404);
    expect(errorOf(unknown)).toMatchObject({ code: 'NOT_FOUND', message: 'invoice not found' });
    const bad = await call('GET', '/api/v1/invoices/nope/preview-html');
    expectStatus(bad, 400);
    expect(errorOf(bad).code).toBe('VALIDATION_ERROR');
    expectStatus(
      await call('GET', '/api/v1/invoices/00000000-0000-4000-8000-000000000000/preview-html', undefined, null),
      401,
    );
  });
});
