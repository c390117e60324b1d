import type { Preview } from '../../../contracts/domains/invoice.ts';
import type { ApplicationRow, CustomerRow, Period, UsageRow, WorklogRow } from '../analytics/reader.ts';
import { buildLines } from '../amounts/lines.ts';
import { dec, hours, money } from '../amounts/policy.ts';
import { totalsOf } from '../amounts/totals.ts';

/** The application as the preview shows it (decimals in their wire forms). */
export const applicationOut = (a: ApplicationRow): Preview['application'] => ({
  application_key: a.application_key,
  customer_key: a.customer_key,
  name: a.name,
  is_active: Boolean(a.is_active),
  deal_type: a.deal_type,
  currency: a.currency,
  base_amount: money(dec(a.base_amount)),
  included_hours: hours(dec(a.included_hours)),
  hourly_rate: money(dec(a.hourly_rate)),
  overtime_rate: money(dec(a.overtime_rate)),
});

/** The invoice of one application and period, as prefill shows it and generate-bulk saves it. */
export function buildPreview(
  data: {
    application: ApplicationRow;
    customer: CustomerRow | undefined;
    worklogs: readonly WorklogRow[];
    usage: readonly UsageRow[];
  },
  period: Period,
  tiers: ReadonlyMap<string, string>,
): Preview {
  const lines = buildLines(data.application, data.worklogs, data.usage, tiers);
  return {
    application_key: data.application.application_key,
    customer_key: data.application.customer_key,
    period_start: period.start,
    period_end: period.end,
    deal_type: data.application.deal_type,
    currency: data.application.currency,
    ...totalsOf(lines),
    line_items: lines,
    customer: data.customer ? { ...data.customer } : null,
    application: applicationOut(data.application),
  };
}

/** The default period is the previous calendar month, UTC (docs/api/invoicing.md#api-notes, "prefill"). */
export function previousMonth(nowMs: number): Period {
  const now = new Date(nowMs);
  const firstOfThis = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  const end = new Date(firstOfThis - 86_400_000);
  return { start: start.toISOString().slice(0, 10), end: end.toISOString().slice(0, 10) };
}
