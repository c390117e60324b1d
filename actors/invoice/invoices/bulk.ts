import type { z } from 'zod';
import type { BulkEntry } from '../../../contracts/domains/invoice.ts';
import type { Period } from '../analytics/reader.ts';
import type { InvoiceDeps } from './deps.ts';
import { buildLines } from '../amounts/lines.ts';
import { totalsOf } from '../amounts/totals.ts';
import { insertInvoices, sql, textArray } from './store.ts';

type Entry = z.infer<typeof BulkEntry>;
type Existing = Pick<Entry, 'id' | 'display_number' | 'status'>;

const SKIP_REASON = 'already invoiced for this period';
/** Drafts saved per transaction. */
const CHUNK = 100;

/**
 * A draft for every active application and the period. An application that already has an invoice with exactly this
 * period (any status) is skipped and reported with that invoice; running it twice creates nothing new. The analytics
 * data of all applications is read in four queries, then the drafts are saved 100 per transaction, under advisory
 * locks on (application, period), so two bulk runs at once cannot both create one. Entries are ordered by
 * application key.
 */
export async function generateBulk(
  deps: InvoiceDeps,
  period: Period,
  editor: string,
  invoiceDate: string,
): Promise<Entry[]> {
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
  const todo = apps.filter((a) => {
    const have = existing.get(a.application_key);
    if (have)
      out.push({
        id: have.id,
        display_number: have.display_number,
        application_key: a.application_key,
        status: have.status,
        skipped: true,
        reason: SKIP_REASON,
      });
    return !have;
  });
  // Many drafts per transaction and a few statements per chunk: statements per application would dominate the run.
  for (let i = 0; i < todo.length; i += CHUNK) {
    const chunk = todo.slice(i, i + CHUNK);
    const entries = await em.fork().transactional(async (tx): Promise<Entry[]> => {
      const keysOfChunk = chunk.map((a) => a.application_key);
      // Sorted, so two bulk runs at once take the locks in the same order (no deadlock).
      const lockKeys = keysOfChunk.map((k) => `invoice-period:${k}:${period.start}:${period.end}`).sort();
      await sql(
        tx,
        `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM (SELECT unnest(?::text[]) AS k ORDER BY 1) s`,
        [textArray(lockKeys)],
      );
      const again = await sql<Existing & { application_key: string }>(
        tx,
        `SELECT DISTINCT ON (application_key) application_key, id, display_number, status FROM invoices
         WHERE application_key = ANY(?::text[]) AND period_start = ? AND period_end = ? ORDER BY application_key, number`,
        [textArray(keysOfChunk), period.start, period.end],
      );
      const taken = new Map(again.map((r) => [r.application_key, r]));
      const done: Entry[] = again.map((r) => ({
        id: r.id,
        display_number: r.display_number,
        application_key: r.application_key,
        status: r.status,
        skipped: true,
        reason: SKIP_REASON,
      }));
      const fresh = chunk.filter((a) => !taken.has(a.application_key));
      const created = await insertInvoices(
        tx,
        fresh.map((application) => {
          const key = application.application_key;
          // The same computation as prefill (buildPreview), so a bulk draft equals the preview of its application.
          const lines = buildLines(application, worklogs.get(key) ?? [], usage.get(key) ?? [], tiers);
          return {
            application_key: key,
            customer_key: application.customer_key,
            period_start: period.start,
            period_end: period.end,
            deal_type: application.deal_type,
            currency: application.currency,
            ...totalsOf(lines),
            invoice_date: invoiceDate,
            customer_snapshot: customers.get(application.customer_key) ?? null,
            application_snapshot: application,
            created_by: editor,
            lines,
          };
        }),
      );
      fresh.forEach((a, j) =>
        done.push({
          ...created[j]!,
          application_key: a.application_key,
          status: 'draft',
          skipped: false,
          reason: null,
        }),
      );
      return done;
    });
    out.push(...entries);
  }
  out.sort((a, b) => (a.application_key < b.application_key ? -1 : a.application_key > b.application_key ? 1 : 0));
  return out;
}
