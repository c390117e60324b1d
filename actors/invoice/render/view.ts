import type { Invoice, LineItem } from '../../../contracts/domains/invoice.ts';
import { dec, hours, money } from '../amounts/policy.ts';
import { formatDate, formatDuration, formatHours, formatMoney, formatPrice } from './format.ts';

/** Who issues the invoices (configuration: SVC_INVOICE_SELLER_*). */
export interface Seller {
  name: string;
  address: string;
  email: string;
  vat_id: string;
}

/** The customer as the invoice's snapshot recorded it at generation (null when the analytics store had none). */
export interface CustomerSnapshot {
  customer_key: string;
  name: string;
  email: string;
  address: string;
  country: string;
  vat_id: string;
}

export interface Renderable {
  invoice: Invoice;
  customer: CustomerSnapshot | null;
  application_name: string | null;
}

interface ViewRow {
  description: string;
  detail: string;
  time: string;
  quantity: string;
  unit_price: string;
  amount: string;
}

/**
 * The template's view model: every value already formatted as text (the template only places and escapes).
 * Display switches (documented in docs/api/invoicing.md#template-actorsinvoicerender):
 * - show_task_list=false: the task lines collapse into one "Services" row (their summed hours and amount);
 * - show_tracked_time=false: no time or quantity column (and no total hours);
 * - show_task_pricing=false: task rows carry no unit price and no amount (the totals still hold them);
 * - show_overtime=false: the overtime lines collapse into one "Additional services" row with the amount only, and the
 *   summary shows no overtime row. The document always adds up: every amount is in exactly one visible row.
 */
export function invoiceView(r: Renderable, seller: Seller) {
  const inv = r.invoice;
  const cur = inv.currency;
  const m = (v: string): string => formatMoney(v, cur);
  // Sums of amounts already in cents (and of hours at 4 decimals) are exact: formatting them rounds nothing.
  const sum = (lines: readonly LineItem[], f: (l: LineItem) => string): string =>
    money(lines.reduce((s, l) => s.add(f(l)), dec(0)));
  const sumHours = (lines: readonly LineItem[]): string => hours(lines.reduce((s, l) => s.add(l.quantity), dec(0)));
  const row = (l: LineItem, priced: boolean): ViewRow => ({
    description: l.description,
    detail: [
      l.tracker_key,
      l.rate_tier && l.rate_multiplier !== '1.0000'
        ? `× ${l.rate_multiplier.replace(/0+$/, '').replace(/\.$/, '')}`
        : null,
    ]
      .filter(Boolean)
      .join(' · '),
    time: l.time_seconds > 0 ? formatDuration(l.billable_seconds) : '',
    quantity:
      !inv.show_tracked_time && (l.line_type === 'task' || l.line_type === 'overtime') ? '' : formatHours(l.quantity),
    unit_price: priced ? formatPrice(l.unit_price, cur) : '',
    amount: priced ? m(l.line_total) : '',
  });
  const tasks = inv.line_items.filter((l) => l.line_type === 'task');
  const overtime = inv.line_items.filter((l) => l.line_type === 'overtime');
  const rows: ViewRow[] = [];
  let tasksPlaced = false;
  let overtimePlaced = false;
  for (const l of inv.line_items) {
    if (l.line_type === 'task') {
      if (inv.show_task_list) rows.push(row(l, inv.show_task_pricing));
      else if (!tasksPlaced) {
        tasksPlaced = true;
        const seconds = tasks.reduce((s, t) => s + t.billable_seconds, 0);
        rows.push({
          description: `Services (${tasks.length} ${tasks.length === 1 ? 'task' : 'tasks'})`,
          detail: '',
          time: seconds > 0 ? formatDuration(seconds) : '',
          quantity: inv.show_tracked_time ? formatHours(sumHours(tasks)) : '',
          unit_price: '',
          amount: inv.show_task_pricing ? m(sum(tasks, (t) => t.line_total)) : '',
        });
      }
    } else if (l.line_type === 'overtime' && !inv.show_overtime) {
      if (!overtimePlaced) {
        overtimePlaced = true;
        rows.push({
          description: 'Additional services',
          detail: '',
          time: '',
          quantity: '',
          unit_price: '',
          amount: m(sum(overtime, (o) => o.line_total)),
        });
      }
    } else rows.push(row(l, true));
  }
  const c = r.customer;
  return {
    display_number: inv.display_number,
    status_note: inv.status === 'draft' ? 'Draft' : null,
    invoice_date: formatDate(inv.invoice_date),
    period: `${formatDate(inv.period_start)} – ${formatDate(inv.period_end)}`,
    application: r.application_name ? `${r.application_name} (${inv.application_key})` : inv.application_key,
    seller: { ...seller, address_lines: seller.address.split(/\r?\n|\s*\|\s*/).filter(Boolean) },
    customer: c
      ? {
          name: c.name,
          address_lines: c.address.split(/\r?\n/).filter(Boolean),
          country: c.country,
          email: c.email,
          vat_id: c.vat_id,
          key: c.customer_key,
        }
      : { name: inv.customer_key, address_lines: [], country: '', email: '', vat_id: '', key: inv.customer_key },
    currency: cur,
    show_time: inv.show_tracked_time,
    rows,
    total_hours: inv.show_tracked_time && tasks.length > 0 ? formatHours(inv.total_hours) : null,
    overtime:
      inv.show_overtime && inv.is_overtime
        ? { hours: formatHours(inv.overtime_hours), amount: m(inv.overtime_amount) }
        : null,
    total: m(inv.total_amount),
    legal_text: inv.legal_text,
  };
}
export type InvoiceView = ReturnType<typeof invoiceView>;
