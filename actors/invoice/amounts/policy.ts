import { Decimal as DecimalJs } from 'decimal.js';

/**
 * THE rounding policy of invoicing, in one place (written down in
 * docs/api/invoicing.md#amounts-and-the-rounding-policy):
 *
 * 1. Hours come from integer seconds: `hours = seconds / 3600`, rounded HALF-UP to 4 decimals, once per line (from
 *    the line's summed seconds, never per worklog).
 * 2. A unit price is a rate times a rate-tier multiplier, exact (2 + 4 decimals = at most 6), never rounded.
 * 3. A line total is `quantity × unit_price` rounded HALF-UP (away from zero) to cents. This is the only rounding to
 *    cents.
 * 4. Invoice figures are plain sums over the lines, never rounded again: base_amount = Σ base line totals,
 *    overtime_amount = Σ overtime line totals, total_amount = Σ every line total, overtime_hours = Σ overtime line
 *    quantities, total_hours = Σ task line quantities. So the lines always add up to the invoice, to the cent.
 *
 * Arithmetic is decimal.js with 40 significant digits: no JavaScript number ever holds money or hours.
 */
export const Dec = DecimalJs.clone({ precision: 40, rounding: DecimalJs.ROUND_HALF_UP });
export type Dec = InstanceType<typeof Dec>;

export const SECONDS_PER_HOUR = 3600;
export const HOUR_DECIMALS = 4;
export const MONEY_DECIMALS = 2;
export const MULTIPLIER_DECIMALS = 4;

export const dec = (v: string | number | Dec): Dec => new Dec(v);

/** Rule 1: seconds (an integer or an exact decimal) to hours at 4 decimals. */
export const hoursOf = (seconds: string | number | Dec): Dec =>
  new Dec(seconds).div(SECONDS_PER_HOUR).toDecimalPlaces(HOUR_DECIMALS, Dec.ROUND_HALF_UP);

/** Rule 2: the unit price of a rate under a multiplier, exact. */
export const unitPriceOf = (rate: string | Dec, multiplier: string | Dec): Dec => new Dec(rate).mul(multiplier);

/** Rule 3: a line total in cents, half-up (away from zero for negative lines). */
export const lineTotalOf = (quantity: string | Dec, unitPrice: string | Dec): Dec =>
  new Dec(quantity).mul(unitPrice).toDecimalPlaces(MONEY_DECIMALS, Dec.ROUND_HALF_UP);

/** Wire forms: amounts with exactly 2 decimals, hours and quantities with 4, multipliers with 4. */
export const money = (d: Dec): string => d.toFixed(MONEY_DECIMALS);
export const hours = (d: Dec): string => d.toFixed(HOUR_DECIMALS);
export const multiplier = (d: Dec): string => d.toFixed(MULTIPLIER_DECIMALS);
/** A unit price keeps its significant decimals (up to 6), never fewer than 2: `"95.00"`, `"118.75"`, `"126.666667"`. */
export function price(d: Dec): string {
  const places = Math.min(Math.max(d.decimalPlaces(), MONEY_DECIMALS), 6);
  return d.toFixed(places);
}
