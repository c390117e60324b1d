import type { LineItemInput } from '../../../contracts/domains/invoice.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { dec, hours, multiplier, price } from '../amounts/policy.ts';
import { lineTotal, sameDecimal } from '../amounts/totals.ts';
import type { NewLine } from './store.ts';

/** Amounts are stored as numeric(15, 2): 13 digits before the point. */
export const MAX_AMOUNT = '9999999999999.99';
export const fitsAmount = (amount: string): boolean => dec(amount).abs().lte(MAX_AMOUNT);

/** A request line with its total computed by the policy; a sent total or flag that disagrees is a 400 naming it. */
export function toNewLine(l: LineItemInput, index: number, path: string): NewLine {
  const total = lineTotal(l);
  if (!fitsAmount(total))
    throw new DomainError(
      'bad_request',
      `${path}: quantity × unit_price (${total}) exceeds the largest amount, ${MAX_AMOUNT}`,
    );
  if (l.line_total !== undefined && !sameDecimal(l.line_total, total)) {
    throw new DomainError(
      'bad_request',
      `${path}.line_total: must be quantity × unit_price rounded half-up to cents (${total})`,
    );
  }
  const auto = l.source === 'analytics';
  if (l.is_auto_generated !== undefined && l.is_auto_generated !== auto) {
    throw new DomainError(
      'bad_request',
      `${path}.is_auto_generated: must be ${auto} for a line with source ${l.source}`,
    );
  }
  return {
    line_type: l.line_type,
    description: l.description,
    tracker_key: l.tracker_key ?? null,
    time_seconds: l.time_seconds,
    billable_seconds: l.billable_seconds,
    unit_price: price(dec(l.unit_price)),
    quantity: hours(dec(l.quantity)),
    line_total: total,
    rate_tier: l.rate_tier ?? null,
    rate_multiplier: multiplier(dec(l.rate_multiplier)),
    source: l.source,
    is_auto_generated: auto,
    sort_order: l.sort_order ?? index,
    linked_issue_key: l.linked_issue_key ?? null,
    worklog_date: l.worklog_date ?? null,
  };
}
