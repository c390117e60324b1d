import type { z } from 'zod';
import type { BulkEntry } from '../../../contracts/domains/invoice.ts';
import type { Period } from '../analytics/reader.ts';
import type { InvoiceDeps } from './handlers.ts';
import { buildLines } from '../amounts/lines.ts';
import { totalsOf } from '../amounts/totals.ts';
import { insertInvoice, sql } from './store.ts';

type Entry = z.infer<typeof BulkEntry>;
type Existing = Pick<Entry, 'id' | 'display_number' | 'status'>;

const SKIP_REASON = 'already invoiced for this period';

/**
 * A draft for every active application and the period. An application that already has an invoice with exactly this
 * period (any status) is skipped and reported with that invoice; running it twice creates nothing new. The analytics
 * data of all applications is read in four queries, then each draft is saved in its own short transaction under an
 * advisory lock on (application, period), so two bulk runs at once cannot both create one.
 */
export async function generateBulk(deps: InvoiceDeps, period: Period, editor: string, invoiceDate: string): Promise<Entry[]> {
  const apps = await deps.reader.activeApplications();
  if (apps.length === 0) return [];
  const keys = apps.map((a) => a.application_key);
  const em = deps.orm.em.fork();
  const [tiers, customers, worklogs, usage, existingRows] = await Promise.all([
    deps.reader.rateTiers(),
    deps.reader.customers(apps.map((a) => a.customer_key)),
    deps.reader.worklogs(keys, period),
    deps.reader.usage(keys, period),
    sql<Existing & { application_key: string }>(
      em,
      `SELECT DISTINCT ON (application_key) application_key, id, display_number, status FROM invoices
       WHERE period_start = ? AND period_end = ? ORDER BY application_key, number`,
      [period.start, period.end],
    ),
  ]);
  const existing = new Map(existingRows.map((r) => [r.application_key, r]));
  const out: Entry[] = [];
  for (const application of apps) {
    const key = application.application_key;
    const have = existing.get(key);
    if (have) {
      out.push({ id: have.id, display_number: have.display_number, application_key: key, status: have.status, skipped: true, reason: SKIP_REASON });
      continue;
    }
    const customer = customers.get(application.customer_key);
    // The same computation as prefill (buildPreview), so a bulk draft equals the preview of its application.
    const lines = buildLines(application, worklogs.get(key) ?? [], usage.get(key) ?? [], tiers);
    const entry = await em.fork().transactional(async (tx): Promise<Entry> => {
      await sql(tx, `SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, [`invoice-period:${key}:${period.start}:${period.end}`]);
      const [again] = await sql<Existing>(tx, `SELECT id, display_number, status FROM invoices WHERE application_key = ? AND period_start = ? AND period_end = ? ORDER BY number LIMIT 1`, [
        key,
        period.start,
        period.end,
      ]);
      if (again) return { ...again, application_key: key, skipped: true, reason: SKIP_REASON };
      const id = await insertInvoice(tx, {
        application_key: key,
        customer_key: application.customer_key,
        period_start: period.start,
        period_end: period.end,
        deal_type: application.deal_type,
        currency: application.currency,
        ...totalsOf(lines),
        invoice_date: invoiceDate,
        customer_snapshot: customer ?? null,
        application_snapshot: application,
        created_by: editor,
        lines,
      });
      const [row] = await sql<{ display_number: string }>(tx, `SELECT display_number FROM invoices WHERE id = ?`, [id]);
      return { id, display_number: row!.display_number, application_key: key, status: 'draft', skipped: false, reason: null };
    });
    out.push(entry);
  }
  return out;
}
