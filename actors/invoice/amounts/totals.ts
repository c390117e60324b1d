import { Dec, dec, hours, lineTotalOf, money } from './policy.ts';

/** What the invoice-level figures are computed from: any line, automatic or added by hand. */
export interface LineFigures {
  line_type: string;
  quantity: string;
  unit_price: string;
}

export interface InvoiceTotals {
  base_amount: string;
  overtime_hours: string;
  overtime_amount: string;
  total_amount: string;
  total_hours: string;
  is_overtime: boolean;
}

/** Rule 3 on a wire line: its total from its own quantity and unit price. */
export const lineTotal = (l: Pick<LineFigures, 'quantity' | 'unit_price'>): string =>
  money(lineTotalOf(l.quantity, l.unit_price));

/** Rule 4: the invoice figures as sums over the lines (never rounded again). */
export function totalsOf(lines: readonly LineFigures[]): InvoiceTotals {
  let base = dec(0);
  let overtimeAmount = dec(0);
  let overtimeHours = dec(0);
  let total = dec(0);
  let taskHours = dec(0);
  for (const l of lines) {
    const t = lineTotalOf(l.quantity, l.unit_price);
    total = total.add(t);
    if (l.line_type === 'base') base = base.add(t);
    else if (l.line_type === 'overtime') {
      overtimeAmount = overtimeAmount.add(t);
      overtimeHours = overtimeHours.add(l.quantity);
    } else if (l.line_type === 'task') taskHours = taskHours.add(l.quantity);
  }
  return {
    base_amount: money(base),
    overtime_hours: hours(overtimeHours),
    overtime_amount: money(overtimeAmount),
    total_amount: money(total),
    total_hours: hours(taskHours),
    is_overtime: overtimeHours.gt(0),
  };
}

/** Equal as decimals (`"10.5"` equals `"10.50"`). */
export const sameDecimal = (a: string, b: string): boolean => new Dec(a).eq(b);
