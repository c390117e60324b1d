import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { EditHistoryEntry } from '../../../contracts/domains/invoice.ts';
import { sql } from './store.ts';

/**
 * Edit history (docs/api/invoicing.md#api-notes, "Edit history"). edit_type is one of:
 * - `invoice_update`: an editable invoice field changed (field_name, old and new value);
 * - `line_add` / `line_remove`: a line was added or removed (the line as JSON in new_value / old_value);
 * - `line_update`: one field of a line changed;
 * - `recalculated`: an invoice figure changed because the lines did (totals follow the lines);
 * - `status_change`: a review move (field_name `status`); `review_comment`: the comment given with it;
 * - `accounting_sync`: the accounting sync state moved (queued by the caller; synced or failed by the worker).
 * Entries are listed oldest first, in the order they were written (a per-table sequence breaks ties within one edit).
 */
export interface HistoryEntry {
  line_item_id?: string | null;
  edit_type: string;
  field_name?: string | null;
  old_value?: string | null;
  new_value?: string | null;
}

/** The invoice figures the lines give (totalsOf): one the lines change is recorded as `recalculated`. */
export const FIGURES = [
  'base_amount',
  'overtime_hours',
  'overtime_amount',
  'total_amount',
  'total_hours',
  'is_overtime',
] as const;

export async function recordHistory(
  tx: EntityManager,
  invoiceId: string,
  editor: string,
  entries: readonly HistoryEntry[],
): Promise<void> {
  if (entries.length === 0) return;
  const params: unknown[] = [];
  for (const e of entries)
    params.push(
      randomUUID(),
      invoiceId,
      e.line_item_id ?? null,
      e.edit_type,
      e.field_name ?? null,
      e.old_value ?? null,
      e.new_value ?? null,
      editor,
    );
  await sql(
    tx,
    `INSERT INTO invoice_edit_history (id, invoice_id, line_item_id, edit_type, field_name, old_value, new_value, edited_by) VALUES ${entries.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
    params,
  );
}

interface Row {
  id: string;
  invoice_id: string;
  line_item_id: string | null;
  edit_type: string;
  field_name: string | null;
  old_value: string | null;
  new_value: string | null;
  edited_by: string;
  edited_at: Date | string;
}

export async function readHistory(em: EntityManager, invoiceId: string): Promise<z.infer<typeof EditHistoryEntry>[]> {
  const rows = await sql<Row>(
    em,
    `SELECT id, invoice_id, line_item_id, edit_type, field_name, old_value, new_value, edited_by, edited_at FROM invoice_edit_history WHERE invoice_id = ? ORDER BY seq`,
    [invoiceId],
  );
  return rows.map((r) => ({
    ...r,
    edited_at:
      r.edited_at instanceof Date
        ? r.edited_at.toISOString()
        : new Date(Date.parse(r.edited_at.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))).toISOString(),
  }));
}

/** A value as the history keeps it: text, null as null. */
export const asText = (v: unknown): string | null =>
  v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v);
