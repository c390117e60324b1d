import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { AccountingSyncState } from '../../../contracts/domains/invoice-accounting.ts';
import type { Invoice, InvoiceListItem, InvoiceStatus, LineItem } from '../../../contracts/domains/invoice.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { dec, hours, money, multiplier, price } from '../amounts/policy.ts';
import type { InvoiceTotals } from '../amounts/totals.ts';
import type { CustomerSnapshot } from '../render/view.ts';
import type { LineFields } from '../amounts/lines.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

/**
 * SQL of the invoice tables (migrations/postgres/Migration0003_invoicing.ts). Dates are read as text (node-pg would
 * turn a `date` into a local-time Date) and numerics arrive as strings, formatted by the amounts policy on the way out.
 */

export const sql = <T>(em: EntityManager, query: string, params: unknown[] = []): Promise<T[]> =>
  em.execute<T[]>(query, params);

const iso = (value: Date | string): string => {
  if (value instanceof Date) return value.toISOString();
  return new Date(Date.parse(value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))).toISOString();
};

/** A line ready to be stored: every figure already computed by the policy. */
export type NewLine = LineFields;

export interface NewInvoice extends InvoiceTotals {
  application_key: string;
  customer_key: string;
  period_start: string;
  period_end: string;
  deal_type: string;
  currency: string;
  invoice_date: string;
  customer_snapshot: unknown;
  application_snapshot: unknown;
  created_by: string;
  lines: readonly NewLine[];
}

const LINE_COLUMNS = [
  'id',
  'invoice_id',
  'line_type',
  'description',
  'tracker_key',
  'time_seconds',
  'billable_seconds',
  'unit_price',
  'quantity',
  'line_total',
  'rate_tier',
  'rate_multiplier',
  'source',
  'is_auto_generated',
  'sort_order',
  'linked_issue_key',
  'worklog_date',
] as const;

/** A PostgreSQL array literal of texts (each element quoted), for `?::text[]` parameters. */
export const textArray = (values: readonly string[]): string =>
  `{${values.map((v) => `"${v.replace(/["\\]/g, (c) => `\\${c}`)}"`).join(',')}}`;

const INVOICE_INSERT_COLUMNS = [
  'id',
  'number',
  'display_number',
  'application_key',
  'customer_key',
  'period_start',
  'period_end',
  'deal_type',
  'currency',
  'base_amount',
  'overtime_hours',
  'overtime_amount',
  'total_amount',
  'total_hours',
  'is_overtime',
  'status',
  'version',
  'invoice_date',
  'customer_snapshot',
  'application_snapshot',
  'created_by',
] as const;

/**
 * Inserts drafts and their lines; must run inside a transaction. The numbers are taken from the counter row by an
 * UPDATE in the same transaction: concurrent generates queue on that row lock and each commit takes the next numbers,
 * and a transaction that rolls back gives its numbers back, so numbers are unique and gap-free.
 */
export async function insertInvoices(
  tx: EntityManager,
  invs: readonly NewInvoice[],
): Promise<{ id: string; display_number: string }[]> {
  if (invs.length === 0) return [];
  const [counter] = await sql<{ value: string | number }>(
    tx,
    `UPDATE invoice_counters SET value = value + ? WHERE name = 'invoice' RETURNING value`,
    [invs.length],
  );
  const first = Number(counter!.value) - invs.length + 1;
  const out = invs.map((_, i) => ({ id: randomUUID(), display_number: `INV-${first + i}` }));
  const params: unknown[] = [];
  invs.forEach((inv, i) => {
    params.push(
      out[i]!.id,
      first + i,
      out[i]!.display_number,
      inv.application_key,
      inv.customer_key,
      inv.period_start,
      inv.period_end,
      inv.deal_type,
      inv.currency,
      inv.base_amount,
      inv.overtime_hours,
      inv.overtime_amount,
      inv.total_amount,
      inv.total_hours,
      inv.is_overtime,
      'draft',
      1,
      inv.invoice_date,
      pgJson(inv.customer_snapshot),
      pgJson(inv.application_snapshot),
      inv.created_by,
    );
  });
  const row = `(${INVOICE_INSERT_COLUMNS.map((c) => (c.endsWith('_snapshot') ? '?::jsonb' : '?')).join(', ')})`;
  await sql(
    tx,
    `INSERT INTO invoices (${INVOICE_INSERT_COLUMNS.join(', ')}) VALUES ${invs.map(() => row).join(', ')}`,
    params,
  );
  await insertLineRows(
    tx,
    invs.flatMap((inv, i) => inv.lines.map((line) => ({ invoiceId: out[i]!.id, line }))),
  );
  return out;
}

/** One draft (see insertInvoices). */
export async function insertInvoice(tx: EntityManager, inv: NewInvoice): Promise<string> {
  const [created] = await insertInvoices(tx, [inv]);
  return created!.id;
}

/** Inserts lines of one invoice with server-generated ids. */
export const insertLines = (tx: EntityManager, invoiceId: string, lines: readonly NewLine[]): Promise<string[]> =>
  insertLineRows(
    tx,
    lines.map((line) => ({ invoiceId, line })),
  );

/** Inserts lines in chunks that stay far below PostgreSQL's bind-parameter limit (65,535). */
async function insertLineRows(
  tx: EntityManager,
  rows: readonly { invoiceId: string; line: NewLine }[],
): Promise<string[]> {
  const ids: string[] = [];
  const CHUNK = 500;
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    const params: unknown[] = [];
    for (const { invoiceId, line: l } of chunk) {
      const id = randomUUID();
      ids.push(id);
      params.push(
        id,
        invoiceId,
        l.line_type,
        l.description,
        l.tracker_key,
        l.time_seconds,
        l.billable_seconds,
        l.unit_price,
        l.quantity,
        l.line_total,
        l.rate_tier,
        l.rate_multiplier,
        l.source,
        l.is_auto_generated,
        l.sort_order,
        l.linked_issue_key,
        l.worklog_date,
      );
    }
    const row = `(${LINE_COLUMNS.map(() => '?').join(', ')})`;
    await sql(
      tx,
      `INSERT INTO invoice_line_items (${LINE_COLUMNS.join(', ')}) VALUES ${chunk.map(() => row).join(', ')}`,
      params,
    );
  }
  return ids;
}

interface InvoiceRow {
  id: string;
  display_number: string;
  application_key: string;
  customer_key: string;
  period_start: string;
  period_end: string;
  deal_type: string;
  currency: string;
  base_amount: string;
  overtime_hours: string;
  overtime_amount: string;
  total_amount: string;
  total_hours: string;
  is_overtime: boolean;
  status: InvoiceStatus;
  version: number;
  created_at: Date | string;
  updated_at: Date | string;
  invoice_date: string;
  show_task_list: boolean;
  show_tracked_time: boolean;
  show_task_pricing: boolean;
  show_overtime: boolean;
  legal_text: string;
  html_override: string | null;
  accounting_sync_state: AccountingSyncState | null;
  accounting_sync_at: Date | string | null;
  accounting_external_id: string | null;
  accounting_sync_error: string | null;
  accounting_synced_version: number | null;
}

const INVOICE_COLUMNS = `id, display_number, application_key, customer_key, period_start::text AS period_start, period_end::text AS period_end,
  deal_type, currency, base_amount::text AS base_amount, overtime_hours::text AS overtime_hours, overtime_amount::text AS overtime_amount,
  total_amount::text AS total_amount, total_hours::text AS total_hours, is_overtime, status, version, created_at, updated_at,
  invoice_date::text AS invoice_date, show_task_list, show_tracked_time, show_task_pricing, show_overtime, legal_text, html_override,
  accounting_sync_state, accounting_sync_at, accounting_external_id, accounting_sync_error, accounting_synced_version`;

interface LineRow extends Omit<LineItem, 'time_seconds' | 'billable_seconds' | 'sort_order'> {
  time_seconds: number | string;
  billable_seconds: number | string;
  sort_order: number | string;
}

const LINE_SELECT = `id, line_type, description, tracker_key, time_seconds, billable_seconds, unit_price::text AS unit_price, quantity::text AS quantity,
  line_total::text AS line_total, rate_tier, rate_multiplier::text AS rate_multiplier, source, is_auto_generated, sort_order, linked_issue_key,
  worklog_date::text AS worklog_date`;

export const lineOut = (l: LineRow): LineItem => ({
  id: l.id,
  line_type: l.line_type,
  description: l.description,
  tracker_key: l.tracker_key,
  time_seconds: Number(l.time_seconds),
  billable_seconds: Number(l.billable_seconds),
  unit_price: price(dec(l.unit_price)),
  quantity: hours(dec(l.quantity)),
  line_total: money(dec(l.line_total)),
  rate_tier: l.rate_tier,
  rate_multiplier: multiplier(dec(l.rate_multiplier)),
  source: l.source,
  is_auto_generated: l.is_auto_generated,
  sort_order: Number(l.sort_order),
  linked_issue_key: l.linked_issue_key,
  worklog_date: l.worklog_date,
});

const invoiceOut = (r: InvoiceRow, lines: LineItem[]): Invoice => ({
  id: r.id,
  display_number: r.display_number,
  application_key: r.application_key,
  customer_key: r.customer_key,
  period_start: r.period_start,
  period_end: r.period_end,
  deal_type: r.deal_type,
  currency: r.currency,
  base_amount: money(dec(r.base_amount)),
  overtime_hours: hours(dec(r.overtime_hours)),
  overtime_amount: money(dec(r.overtime_amount)),
  total_amount: money(dec(r.total_amount)),
  total_hours: hours(dec(r.total_hours)),
  is_overtime: r.is_overtime,
  status: r.status,
  version: Number(r.version),
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  invoice_date: r.invoice_date,
  show_task_list: r.show_task_list,
  show_tracked_time: r.show_tracked_time,
  show_task_pricing: r.show_task_pricing,
  show_overtime: r.show_overtime,
  legal_text: r.legal_text,
  html_override: r.html_override,
  accounting_sync_state: r.accounting_sync_state,
  accounting_sync_at: r.accounting_sync_at === null ? null : iso(r.accounting_sync_at),
  accounting_external_id: r.accounting_external_id,
  accounting_sync_error: r.accounting_sync_error,
  accounting_synced_version: r.accounting_synced_version === null ? null : Number(r.accounting_synced_version),
  line_items: lines,
});

/** One invoice with its lines (by sort_order, then id), or 404. `lock` holds the invoice row for the transaction. */
export async function loadInvoice(em: EntityManager, id: string, lock = false): Promise<Invoice> {
  const [row] = await sql<InvoiceRow>(
    em,
    `SELECT ${INVOICE_COLUMNS} FROM invoices WHERE id = ?${lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  if (!row) throw new DomainError('not_found', 'invoice not found');
  const lines = await sql<LineRow>(
    em,
    `SELECT ${LINE_SELECT} FROM invoice_line_items WHERE invoice_id = ? ORDER BY sort_order, id`,
    [id],
  );
  return invoiceOut(row, lines.map(lineOut));
}

/** A list row: the list item's fields of the invoice row. */
type ListRow = Pick<
  InvoiceRow,
  | 'id'
  | 'display_number'
  | 'application_key'
  | 'customer_key'
  | 'period_start'
  | 'period_end'
  | 'deal_type'
  | 'currency'
  | 'total_amount'
  | 'status'
  | 'created_at'
>;

/** A page of list items, newest display number first (numbers are unique: the order is total and stable). */
export async function listInvoices(
  em: EntityManager,
  q: { status?: InvoiceStatus | undefined; application_key?: string | undefined; page: number; per_page: number },
): Promise<{ items: InvoiceListItem[]; total: number }> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (q.status) {
    where.push('status = ?');
    params.push(q.status);
  }
  if (q.application_key) {
    where.push('application_key = ?');
    params.push(q.application_key);
  }
  const filter = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
  const [count] = await sql<{ n: number }>(em, `SELECT count(*)::int AS n FROM invoices ${filter}`, params);
  const rows = await sql<ListRow>(
    em,
    `SELECT id, display_number, application_key, customer_key, period_start::text AS period_start, period_end::text AS period_end, deal_type, currency,
       total_amount::text AS total_amount, status, created_at
     FROM invoices ${filter} ORDER BY number DESC LIMIT ? OFFSET ?`,
    [...params, q.per_page, (q.page - 1) * q.per_page],
  );
  return {
    total: count?.n ?? 0,
    items: rows.map((r) => ({
      id: r.id,
      display_number: r.display_number,
      application_key: r.application_key,
      customer_key: r.customer_key,
      period_start: r.period_start,
      period_end: r.period_end,
      deal_type: r.deal_type,
      currency: r.currency,
      total_amount: money(dec(r.total_amount)),
      status: r.status,
      created_at: iso(r.created_at),
    })),
  };
}

/** An invoice with what the document shows beyond it: the customer and application as recorded at generation. */
export async function loadRenderable(
  em: EntityManager,
  id: string,
  lock = false,
): Promise<{ invoice: Invoice; customer: CustomerSnapshot | null; application_name: string | null }> {
  type Row = InvoiceRow & { customer_snapshot: CustomerSnapshot | null; application_name: string | null };
  const rowQuery = `SELECT ${INVOICE_COLUMNS}, customer_snapshot, application_snapshot->>'name' AS application_name FROM invoices WHERE id = ?`;
  const linesQuery = `SELECT ${LINE_SELECT} FROM invoice_line_items WHERE invoice_id = ? ORDER BY sort_order, id`;
  // Locked (finalize): the lines are read after the row lock is held. Otherwise (the preview) both statements go at
  // once, so a preview waits for one round trip to the store instead of three in a row.
  const [[row], lines] = lock
    ? [await sql<Row>(em, `${rowQuery} FOR UPDATE`, [id]), await sql<LineRow>(em, linesQuery, [id])]
    : await Promise.all([sql<Row>(em, rowQuery, [id]), sql<LineRow>(em, linesQuery, [id])]);
  if (!row) throw new DomainError('not_found', 'invoice not found');
  return {
    invoice: invoiceOut(row, lines.map(lineOut)),
    customer: row.customer_snapshot ?? null,
    application_name: row.application_name ?? null,
  };
}
