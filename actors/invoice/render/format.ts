/**
 * Display forms of the wire's decimal strings, done on the digits themselves: the rendered invoice must show exactly
 * the stored amounts, so nothing passes through a JavaScript number and nothing is rounded here.
 */

const SYMBOLS: Readonly<Record<string, string>> = { EUR: '€', GBP: '£', USD: '$' };

/** `"1234567.5"` → `"1,234,567.50"`: thousands grouped, at least `minFraction` decimals (pads, never rounds). */
export function groupDigits(value: string, minFraction = 2): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!m) return value;
  const [, sign = '', int = '0', frac = ''] = m;
  const grouped = int.replace(/^0+(?=\d)/, '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = frac.padEnd(minFraction, '0');
  return `${sign === '-' ? '−' : ''}${grouped}${fraction ? `.${fraction}` : ''}`;
}

/** An amount with its currency: `€2,300.00`, `CHF 2,300.00`, `−€12.50`. */
export function formatMoney(amount: string, currency: string): string {
  const digits = groupDigits(amount, 2);
  const negative = digits.startsWith('−');
  const abs = negative ? digits.slice(1) : digits;
  const symbol = SYMBOLS[currency];
  return `${negative ? '−' : ''}${symbol ? `${symbol}${abs}` : `${currency} ${abs}`}`;
}

/** Hours kept at 4 decimals on the wire, shown with trailing zeros beyond two dropped: `12.5000` → `12.50`, `0.0003` stays. */
export function formatHours(value: string): string {
  const m = /^(-?\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!m) return value;
  const frac = (m[2] ?? '').replace(/0+$/, '').padEnd(2, '0');
  return groupDigits(`${m[1]}.${frac}`, 2);
}

/** A unit price as stored (up to 6 decimals), grouped: `126.666667` stays exact. */
export const formatPrice = (value: string, currency: string): string => formatMoney(value, currency);

/** Integer seconds as `h:mm` (tracked time; integers are exact in a number). */
export function formatDuration(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  return `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, '0')}`;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** `2026-10-31` → `31 October 2026` (read from the digits: no time zone can shift it). */
export function formatDate(value: string | null): string {
  if (!value) return '';
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return value;
  return `${Number(m[3])} ${MONTHS[Number(m[2]) - 1] ?? m[2]} ${m[1]}`;
}
