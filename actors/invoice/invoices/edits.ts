import type { EntityManager } from '@mikro-orm/postgresql';
import type { Invoice, LineItem, LineItemsBody, UpdateInvoiceBody } from '../../../contracts/domains/invoice.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { Dec, dec, hours, lineTotalOf, money, multiplier, price } from '../amounts/policy.ts';
import { lineTotal, sameDecimal, totalsOf, type InvoiceTotals } from '../amounts/totals.ts';
import { fitsAmount, MAX_AMOUNT, toNewLine } from './lines-input.ts';
import { asText, FIGURES, recordHistory, type HistoryEntry } from './history.ts';
import { publishReviewMove, type MoveDeps } from './review-event.ts';
import { insertLines, loadInvoice, sql, type NewLine } from './store.ts';

/**
 * Edits of a draft. Each runs in one transaction that first locks the invoice row (SELECT … FOR UPDATE), so edits of
 * one invoice are serialized and none is lost; an optional `version` in the body turns a stale edit into 409. Every
 * edit that changes something bumps `version` by one and writes the edit history; one that changes nothing does
 * neither. Line edits are allowed in `draft` only (like invoice edits: a finalized invoice has a PDF to match).
 */

async function lockDraft(tx: EntityManager, id: string, version: number | undefined): Promise<Invoice> {
  const inv = await loadInvoice(tx, id, true);
  if (version !== undefined && version !== inv.version)
    throw new DomainError(
      'conflict',
      `the invoice is at version ${inv.version}, not ${version}; reload it and edit again`,
    );
  if (inv.status !== 'draft')
    throw new DomainError('conflict', `only a draft can be edited; this invoice is ${inv.status}`);
  return inv;
}

/** Stores the figures the lines now give, bumps the version and records what the recalculation changed. */
async function settle(
  tx: EntityManager,
  before: Invoice,
  history: HistoryEntry[],
  editor: string,
  extraSet: Record<string, unknown> = {},
): Promise<void> {
  const lines = await sql<{ line_type: string; quantity: string; unit_price: string }>(
    tx,
    `SELECT line_type, quantity::text AS quantity, unit_price::text AS unit_price FROM invoice_line_items WHERE invoice_id = ?`,
    [before.id],
  );
  const totals = totalsOf(lines);
  if (!fitsAmount(totals.total_amount))
    throw new DomainError(
      'bad_request',
      `the invoice total (${totals.total_amount}) would exceed the largest amount, ${MAX_AMOUNT}`,
    );
  const edited = new Set(history.filter((h) => h.edit_type === 'invoice_update').map((h) => h.field_name));
  for (const f of FIGURES) {
    if (!edited.has(f) && String(before[f]) !== String(totals[f]))
      history.push({
        edit_type: 'recalculated',
        field_name: f,
        old_value: String(before[f]),
        new_value: String(totals[f]),
      });
  }
  if (history.length === 0) return;
  const set = { ...extraSet, ...totals };
  const cols = Object.keys(set);
  await sql(
    tx,
    `UPDATE invoices SET ${cols.map((c) => `${c} = ?`).join(', ')}, version = version + 1, updated_at = now() WHERE id = ?`,
    [...cols.map((c) => set[c as keyof typeof set]), before.id],
  );
  await recordHistory(tx, before.id, editor, history);
}

async function setLine(
  tx: EntityManager,
  lineId: string,
  fields: Partial<Record<keyof NewLine, unknown>>,
): Promise<void> {
  const cols = Object.keys(fields);
  if (cols.length === 0) return;
  await sql(
    tx,
    `UPDATE invoice_line_items SET ${cols.map((c) => `${c} = ?`).join(', ')}, updated_at = now() WHERE id = ?`,
    [...cols.map((c) => fields[c as keyof NewLine]), lineId],
  );
}

const lineJson = (l: Pick<LineItem, 'line_type' | 'description' | 'quantity' | 'unit_price' | 'line_total'>): string =>
  JSON.stringify({
    line_type: l.line_type,
    description: l.description,
    quantity: l.quantity,
    unit_price: l.unit_price,
    line_total: l.line_total,
  });

/** Replaces the lines of `type` by one line `{quantity, unit}` (the first keeps its id), or adds one. */
async function rewriteLines(
  tx: EntityManager,
  inv: Invoice,
  type: 'base' | 'overtime',
  quantity: Dec,
  unit: Dec,
  description: string,
  history: HistoryEntry[],
): Promise<void> {
  const existing = inv.line_items.filter((l) => l.line_type === type);
  for (const l of existing.slice(1)) {
    await sql(tx, `DELETE FROM invoice_line_items WHERE id = ?`, [l.id]);
    history.push({ line_item_id: l.id, edit_type: 'line_remove', old_value: lineJson(l) });
  }
  if (quantity.isZero() && unit.isZero()) {
    if (existing[0]) {
      await sql(tx, `DELETE FROM invoice_line_items WHERE id = ?`, [existing[0].id]);
      history.push({ line_item_id: existing[0].id, edit_type: 'line_remove', old_value: lineJson(existing[0]) });
    }
    return;
  }
  const next = { quantity: hours(quantity), unit_price: price(unit), line_total: money(lineTotalOf(quantity, unit)) };
  const first = existing[0];
  if (first) {
    const changed = (['quantity', 'unit_price', 'line_total'] as const).filter((k) => first[k] !== next[k]);
    await setLine(tx, first.id, Object.fromEntries(changed.map((k) => [k, next[k]])));
    for (const k of changed)
      history.push({
        line_item_id: first.id,
        edit_type: 'line_update',
        field_name: k,
        old_value: first[k],
        new_value: next[k],
      });
    return;
  }
  const line: NewLine = {
    line_type: type,
    description,
    tracker_key: null,
    time_seconds: 0,
    billable_seconds: 0,
    ...next,
    rate_tier: null,
    rate_multiplier: multiplier(dec(1)),
    source: 'manual',
    is_auto_generated: false,
    sort_order: type === 'base' ? 0 : nextSort(inv),
    linked_issue_key: null,
    worklog_date: null,
  };
  const [id] = await insertLines(tx, inv.id, [line]);
  history.push({ line_item_id: id ?? null, edit_type: 'line_add', new_value: lineJson(line) });
}

const nextSort = (inv: Invoice): number => inv.line_items.reduce((m, l) => Math.max(m, l.sort_order + 1), 0);

/**
 * PATCH invoice. The amount figures are sums over the lines (the rounding policy), so editing one edits lines:
 * - base_amount: the base line becomes `1 × base_amount` (added when there is none);
 * - overtime_hours / overtime_amount: the overtime lines become one line of `overtime_hours` at the unit price
 *   `overtime_amount / overtime_hours` (6 decimals); an amount that price cannot reach to the cent is a 400;
 * - is_overtime: must agree with the resulting overtime hours (it is not a free flag);
 * - total_amount: a manual `Adjustment` line carries the difference to the sum of the other lines.
 */
export async function updateInvoice(
  tx: EntityManager,
  id: string,
  body: UpdateInvoiceBody,
  editor: string,
): Promise<Invoice> {
  const inv = await lockDraft(tx, id, body.version);
  const history: HistoryEntry[] = [];
  const set: Record<string, unknown> = {};
  for (const f of [
    'invoice_date',
    'show_task_list',
    'show_tracked_time',
    'show_task_pricing',
    'show_overtime',
    'legal_text',
    'html_override',
  ] as const) {
    const v = body[f];
    if (v === undefined || v === inv[f]) continue;
    set[f] = v;
    history.push({ edit_type: 'invoice_update', field_name: f, old_value: asText(inv[f]), new_value: asText(v) });
  }
  const amountEdit = (field: string, value: string | undefined, current: string): boolean => {
    if (value === undefined || sameDecimal(value, current)) return false;
    history.push({ edit_type: 'invoice_update', field_name: field, old_value: current, new_value: value });
    return true;
  };
  if (amountEdit('base_amount', body.base_amount, inv.base_amount)) {
    await rewriteLines(tx, inv, 'base', dec(1), dec(body.base_amount!), 'Base amount', history);
  }
  const hoursChanged = amountEdit('overtime_hours', body.overtime_hours, inv.overtime_hours);
  const amountChanged = amountEdit('overtime_amount', body.overtime_amount, inv.overtime_amount);
  if (hoursChanged || amountChanged) {
    const q = dec(body.overtime_hours ?? inv.overtime_hours);
    const a = dec(body.overtime_amount ?? inv.overtime_amount);
    if (q.isNegative()) throw new DomainError('bad_request', 'body.overtime_hours: must not be negative');
    if (q.isZero() && !a.isZero())
      throw new DomainError('bad_request', 'body.overtime_amount: must be 0.00 without overtime hours');
    const unit = q.isZero() ? dec(0) : a.div(q).toDecimalPlaces(6, Dec.ROUND_HALF_UP);
    if (!q.isZero() && !lineTotalOf(q, unit).eq(a))
      throw new DomainError(
        'bad_request',
        `body.overtime_amount: ${money(a)} is not reachable as ${hours(q)} hours at a unit price of 6 decimals`,
      );
    await rewriteLines(tx, inv, 'overtime', q, unit, 'Overtime', history);
  }
  // The rest is checked against the lines as they are now.
  const current = await loadInvoice(tx, id);
  const totals: InvoiceTotals = totalsOf(current.line_items);
  if (body.is_overtime !== undefined && body.is_overtime !== totals.is_overtime) {
    throw new DomainError(
      'bad_request',
      `body.is_overtime: follows the overtime hours (${totals.overtime_hours}); change overtime_hours instead`,
    );
  }
  if (body.total_amount !== undefined && !sameDecimal(body.total_amount, totals.total_amount)) {
    history.push({
      edit_type: 'invoice_update',
      field_name: 'total_amount',
      old_value: inv.total_amount,
      new_value: money(dec(body.total_amount)),
    });
    const diff = dec(body.total_amount).sub(totals.total_amount);
    const line: NewLine = {
      line_type: 'manual',
      description: 'Adjustment',
      tracker_key: null,
      time_seconds: 0,
      billable_seconds: 0,
      unit_price: price(diff),
      quantity: hours(dec(1)),
      line_total: money(diff),
      rate_tier: null,
      rate_multiplier: multiplier(dec(1)),
      source: 'manual',
      is_auto_generated: false,
      sort_order: nextSort(current),
      linked_issue_key: null,
      worklog_date: null,
    };
    const [lineId] = await insertLines(tx, id, [line]);
    history.push({ line_item_id: lineId ?? null, edit_type: 'line_add', new_value: lineJson(line) });
  }
  await settle(tx, inv, history, editor, set);
  return loadInvoice(tx, id);
}

/** PATCH line-items: remove, then update, then add, in one transaction; only the supplied fields of a line change. */
export async function updateLineItems(
  tx: EntityManager,
  id: string,
  body: LineItemsBody,
  editor: string,
): Promise<Invoice> {
  const inv = await lockDraft(tx, id, body.version);
  const byId = new Map(inv.line_items.map((l) => [l.id, l]));
  const history: HistoryEntry[] = [];
  for (const lineId of body.remove) {
    const line = byId.get(lineId);
    if (!line) throw new DomainError('not_found', `line item ${lineId} not found on this invoice`);
    await sql(tx, `DELETE FROM invoice_line_items WHERE id = ?`, [lineId]);
    history.push({ line_item_id: lineId, edit_type: 'line_remove', old_value: lineJson(line) });
  }
  // Every referenced line is checked before anything is written (a 404 leaves no partial update behind anyway: one transaction).
  for (const patch of body.update)
    if (!byId.has(patch.id)) throw new DomainError('not_found', `line item ${patch.id} not found on this invoice`);
  for (const [i, patch] of body.update.entries()) {
    const line = byId.get(patch.id)!;
    const next: Record<string, string | number | null> = {};
    const norm: Partial<Record<keyof LineItem, string | number | null>> = {
      line_type: patch.line_type,
      description: patch.description,
      tracker_key: patch.tracker_key,
      time_seconds: patch.time_seconds,
      billable_seconds: patch.billable_seconds,
      unit_price: patch.unit_price === undefined ? undefined : price(dec(patch.unit_price)),
      quantity: patch.quantity === undefined ? undefined : hours(dec(patch.quantity)),
      rate_tier: patch.rate_tier,
      rate_multiplier: patch.rate_multiplier === undefined ? undefined : multiplier(dec(patch.rate_multiplier)),
      sort_order: patch.sort_order,
      linked_issue_key: patch.linked_issue_key,
      worklog_date: patch.worklog_date,
    };
    for (const [k, v] of Object.entries(norm)) if (v !== undefined && v !== line[k as keyof LineItem]) next[k] = v;
    const total = lineTotal({
      quantity: String(next.quantity ?? line.quantity),
      unit_price: String(next.unit_price ?? line.unit_price),
    });
    if (patch.line_total !== undefined && !sameDecimal(patch.line_total, total)) {
      throw new DomainError(
        'bad_request',
        `body.update.${i}.line_total: must be quantity × unit_price rounded half-up to cents (${total})`,
      );
    }
    if (!fitsAmount(total))
      throw new DomainError(
        'bad_request',
        `body.update.${i}: quantity × unit_price (${total}) exceeds the largest amount, ${MAX_AMOUNT}`,
      );
    if (total !== line.line_total) next.line_total = total;
    await setLine(tx, line.id, next);
    for (const [k, v] of Object.entries(next))
      history.push({
        line_item_id: line.id,
        edit_type: 'line_update',
        field_name: k,
        old_value: asText(line[k as keyof LineItem]),
        new_value: asText(v),
      });
  }
  if (body.add.length > 0) {
    const start = nextSort(inv);
    const lines = body.add.map((l, i) => toNewLine(l, start + i, `body.add.${i}`));
    const ids = await insertLines(tx, id, lines);
    lines.forEach((l, i) =>
      history.push({ line_item_id: ids[i] ?? null, edit_type: 'line_add', new_value: lineJson(l) }),
    );
  }
  await settle(tx, inv, history, editor);
  // Read inside the transaction: the answer is this edit's result, not a later concurrent one's.
  return loadInvoice(tx, id);
}

/** Review moves: approve/reject/decline from needs_review, send from approved; 409 from any other state. */
const MOVES = {
  approve: { from: 'needs_review', to: 'approved' },
  reject: { from: 'needs_review', to: 'rejected' },
  decline: { from: 'needs_review', to: 'declined' },
  send: { from: 'approved', to: 'sent' },
} as const;

export async function review(
  tx: EntityManager,
  { id, action, comment }: { id: string; action: keyof typeof MOVES; comment?: string | undefined },
  deps: MoveDeps,
): Promise<Invoice> {
  const inv = await loadInvoice(tx, id, true);
  const move = MOVES[action];
  if (inv.status !== move.from)
    throw new DomainError('conflict', `${action} needs an invoice in ${move.from}; this one is ${inv.status}`);
  await sql(tx, `UPDATE invoices SET status = ?, version = version + 1, updated_at = now() WHERE id = ?`, [
    move.to,
    id,
  ]);
  const history: HistoryEntry[] = [
    { edit_type: 'status_change', field_name: 'status', old_value: inv.status, new_value: move.to },
  ];
  if (comment) history.push({ edit_type: 'review_comment', field_name: 'comment', new_value: comment });
  await recordHistory(tx, id, deps.editor, history);
  const after = await loadInvoice(tx, id);
  // Sending is past review: the event tells of entering and leaving review only. An empty comment is none, as above.
  if (move.to !== 'sent')
    await publishReviewMove(deps, after, { status: move.to, previous: inv.status, comment: comment || null });
  return after;
}
