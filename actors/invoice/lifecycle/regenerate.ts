import type { EntityManager } from '@mikro-orm/postgresql';
import type { Invoice } from '../../../contracts/domains/invoice.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { AnalyticsReader } from '../analytics/reader.ts';
import { buildLines } from '../amounts/lines.ts';
import { totalsOf } from '../amounts/totals.ts';
import { FIGURES, recordHistory, type HistoryEntry } from '../invoices/history.ts';
import { fitsAmount, MAX_AMOUNT } from '../invoices/lines-input.ts';
import { insertLines, loadInvoice, sql, textArray } from '../invoices/store.ts';
import { deletePdf } from '../pdf/store.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

const FROM = ['declined', 'rejected', 'approved'] as const;
const lineJson = (l: {
  line_type: string;
  description: string;
  quantity: string;
  unit_price: string;
  line_total: string;
}): string =>
  JSON.stringify({
    line_type: l.line_type,
    description: l.description,
    quantity: l.quantity,
    unit_price: l.unit_price,
    line_total: l.line_total,
  });

/**
 * regenerate: declined, rejected or approved → draft, rebuilt from what the analytics store says now (409 from any
 * other status). In one transaction holding the invoice row:
 * - every automatic line (source `analytics`) is replaced by the fresh computation, INCLUDING automatic lines a person
 *   edited: fresh data is the point of regenerating, and an edit of a computed line cannot be re-applied to a
 *   recomputed one. Those edits are not lost silently: each replaced line is in the history (`line_remove` with its
 *   values), and the `regenerated` entry names the edited lines that were replaced. A correction that must survive
 *   belongs in a manual line;
 * - lines added by hand (source `manual`, including PATCH invoice's adjustment lines) survive unchanged, placed after
 *   the fresh lines in their previous order;
 * - the customer and application snapshots, deal type and currency follow the analytics store; the display fields
 *   (invoice_date, switches, legal_text, html_override) stay; figures are recomputed from the lines;
 * - the stored PDF is deleted (it shows the old figures; GET pdf is 404 until the next finalize);
 * - version + 1, and the history records the status move, the summary and every line replaced or added.
 */
export async function regenerate(
  tx: EntityManager,
  id: string,
  deps: { reader: AnalyticsReader; editor: string },
): Promise<Invoice> {
  const inv = await loadInvoice(tx, id, true);
  if (!(FROM as readonly string[]).includes(inv.status))
    throw new DomainError(
      'conflict',
      `only a declined, rejected or approved invoice can be regenerated; this invoice is ${inv.status}`,
    );
  const period = { start: inv.period_start, end: inv.period_end };
  const [data, tiers] = await Promise.all([
    deps.reader.forApplication(inv.application_key, period),
    deps.reader.rateTiers(),
  ]);
  if (!data) throw new DomainError('not_found', 'application not found in the analytics store');
  const fresh = buildLines(data.application, data.worklogs, data.usage, tiers);
  const auto = inv.line_items.filter((l) => l.source === 'analytics');
  const manual = inv.line_items.filter((l) => l.source !== 'analytics');
  const totals = totalsOf([...fresh, ...manual]);
  if (!fitsAmount(totals.total_amount))
    throw new DomainError(
      'bad_request',
      `the regenerated total (${totals.total_amount}) exceeds the largest amount, ${MAX_AMOUNT}`,
    );

  const edited =
    auto.length === 0
      ? []
      : await sql<{ line_item_id: string }>(
          tx,
          `SELECT DISTINCT line_item_id::text AS line_item_id FROM invoice_edit_history WHERE invoice_id = ? AND edit_type = 'line_update' AND line_item_id::text = ANY(?::text[])`,
          [id, textArray(auto.map((l) => l.id))],
        );
  await sql(tx, `DELETE FROM invoice_line_items WHERE invoice_id = ? AND source = 'analytics'`, [id]);
  const ids = await insertLines(tx, id, fresh);
  for (const [i, l] of manual.entries())
    await sql(tx, `UPDATE invoice_line_items SET sort_order = ? WHERE id = ?`, [fresh.length + i, l.id]);
  await sql(
    tx,
    `UPDATE invoices SET status = 'draft', version = version + 1, updated_at = now(), deal_type = ?, currency = ?, customer_snapshot = ?::jsonb, application_snapshot = ?::jsonb,
       base_amount = ?, overtime_hours = ?, overtime_amount = ?, total_amount = ?, total_hours = ?, is_overtime = ? WHERE id = ?`,
    [
      data.application.deal_type,
      data.application.currency,
      pgJson(data.customer ?? null),
      pgJson(data.application),
      totals.base_amount,
      totals.overtime_hours,
      totals.overtime_amount,
      totals.total_amount,
      totals.total_hours,
      totals.is_overtime,
      id,
    ],
  );
  await deletePdf(tx, id);
  const history: HistoryEntry[] = [
    { edit_type: 'status_change', field_name: 'status', old_value: inv.status, new_value: 'draft' },
    {
      edit_type: 'regenerated',
      field_name: 'line_items',
      new_value: JSON.stringify({
        replaced: auto.length,
        added: fresh.length,
        kept_manual: manual.length,
        replaced_edited_lines: edited.map((e) => e.line_item_id).sort(),
      }),
    },
    ...auto.map((l): HistoryEntry => ({ line_item_id: l.id, edit_type: 'line_remove', old_value: lineJson(l) })),
    ...fresh.map((l, i): HistoryEntry => ({
      line_item_id: ids[i] ?? null,
      edit_type: 'line_add',
      new_value: lineJson(l),
    })),
    ...FIGURES.filter((f) => String(inv[f]) !== String(totals[f])).map((f): HistoryEntry => ({
      edit_type: 'recalculated',
      field_name: f,
      old_value: String(inv[f]),
      new_value: String(totals[f]),
    })),
  ];
  await recordHistory(tx, id, deps.editor, history);
  return loadInvoice(tx, id);
}
