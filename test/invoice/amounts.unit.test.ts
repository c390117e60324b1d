import { describe, expect, it } from 'vitest';
import type { ApplicationRow, UsageRow, WorklogRow } from '../../actors/invoice/analytics/reader.ts';
import { buildLines } from '../../actors/invoice/amounts/lines.ts';
import { dec, hoursOf, lineTotalOf, money, price, unitPriceOf } from '../../actors/invoice/amounts/policy.ts';
import { lineTotal, totalsOf } from '../../actors/invoice/amounts/totals.ts';

/** Every expected figure below was computed by hand from the policy in actors/invoice/amounts/policy.ts. */

const tiers = new Map([
  ['standard', '1.0000'],
  ['weekend', '1.5000'],
  ['urgent', '1.2500'],
]);

const app = (over: Partial<ApplicationRow>): ApplicationRow => ({
  application_key: 'APP-1',
  customer_key: 'CUST-1',
  name: 'Shop',
  is_active: true,
  deal_type: 'TM',
  currency: 'EUR',
  base_amount: '0',
  included_hours: '0',
  hourly_rate: '95.00',
  overtime_rate: '0',
  ...over,
});

let seq = 0;
const wl = (
  tracker_key: string,
  rate_tier: string,
  billable_seconds: number,
  worklog_date = '2026-10-01',
  time_seconds = billable_seconds,
): WorklogRow => ({
  worklog_id: `w${String(++seq).padStart(5, '0')}`,
  tracker_key,
  linked_issue_key: `${tracker_key}-L`,
  description: `work on ${tracker_key}`,
  worklog_date,
  time_seconds,
  billable_seconds,
  rate_tier,
});

const sumOfLines = (lines: { line_total: string }[]): string =>
  money(lines.reduce((s, l) => s.add(l.line_total), dec(0)));

describe('rounding policy', () => {
  it('rounds hours half-up to 4 decimals from seconds', () => {
    expect(hoursOf(1).toFixed(4)).toBe('0.0003'); // 0.000277…
    expect(hoursOf(2).toFixed(4)).toBe('0.0006'); // 0.000555…
    expect(hoursOf(7).toFixed(4)).toBe('0.0019'); // 0.001944…
    expect(hoursOf(5400).toFixed(4)).toBe('1.5000');
    // A half at the 5th decimal (fractional seconds, e.g. from included hours): 0.18 s = 0.00005 h → 0.0001.
    expect(hoursOf('0.18').toFixed(4)).toBe('0.0001');
  });

  it('rounds line totals half-up to the cent, away from zero, where floats would not', () => {
    expect(money(lineTotalOf('1.0050', '1.00'))).toBe('1.01'); // 1.005 as a float rounds to 1.00
    expect(money(lineTotalOf('0.5000', '118.75'))).toBe('59.38'); // 59.375
    expect(money(lineTotalOf('0.0001', '50'))).toBe('0.01'); // 0.005
    expect(money(lineTotalOf('0.0001', '49.99'))).toBe('0.00'); // 0.004999
    expect(money(lineTotalOf('-1.0000', '0.125'))).toBe('-0.13'); // -0.125, away from zero
    expect(money(lineTotalOf('3.0000', '0.333333'))).toBe('1.00'); // 0.999999
    expect(lineTotal({ quantity: '2.3333', unit_price: '33.33' })).toBe('77.77'); // 77.768889
  });

  it('keeps unit prices exact (rate × multiplier, up to 6 decimals)', () => {
    expect(price(unitPriceOf('95.00', '1.2500'))).toBe('118.75');
    expect(price(unitPriceOf('95.00', '1.0000'))).toBe('95.00');
    expect(price(unitPriceOf('95.55', '1.3333'))).toBe('127.396815');
  });
});

describe('time and materials (TM)', () => {
  it('prices each (task, tier) line at hourly rate × multiplier, half-cent lines included', () => {
    const lines = buildLines(
      app({}),
      [
        wl('A-1', 'standard', 3600),
        wl('A-1', 'standard', 1800),
        wl('A-1', 'weekend', 3600),
        wl('B-2', 'urgent', 1800),
        wl('C-3', 'standard', 2),
      ],
      [],
      tiers,
    );
    expect(lines.map((l) => [l.line_type, l.tracker_key, l.rate_tier, l.quantity, l.unit_price, l.line_total])).toEqual(
      [
        ['task', 'A-1', 'standard', '1.5000', '95.00', '142.50'],
        ['task', 'A-1', 'weekend', '1.0000', '142.50', '142.50'],
        ['task', 'B-2', 'urgent', '0.5000', '118.75', '59.38'],
        ['task', 'C-3', 'standard', '0.0006', '95.00', '0.06'], // 0.057
      ],
    );
    expect(lines.map((l) => l.sort_order)).toEqual([0, 1, 2, 3]);
    expect(lines[0]).toMatchObject({
      time_seconds: 5400,
      billable_seconds: 5400,
      rate_multiplier: '1.0000',
      source: 'analytics',
      is_auto_generated: true,
    });
    const totals = totalsOf(lines);
    expect(totals).toEqual({
      base_amount: '0.00',
      overtime_hours: '0.0000',
      overtime_amount: '0.00',
      total_amount: '344.44',
      total_hours: '3.0006',
      is_overtime: false,
    });
    expect(sumOfLines(lines)).toBe(totals.total_amount);
  });

  it('counts billable seconds, not tracked time, and an unknown tier at multiplier 1', () => {
    const lines = buildLines(app({}), [wl('A-1', 'mystery', 1800, '2026-10-02', 3600)], [], tiers);
    expect(lines[0]).toMatchObject({
      quantity: '0.5000',
      unit_price: '95.00',
      line_total: '47.50',
      time_seconds: 3600,
      billable_seconds: 1800,
      rate_multiplier: '1.0000',
      rate_tier: 'mystery',
    });
  });
});

describe('retainer (RET)', () => {
  const ret = app({ deal_type: 'RET', base_amount: '2000.00', included_hours: '10.0000', overtime_rate: '120.00' });

  it('bills overtime beyond the included hours per tier, splitting the worklog that crosses the limit', () => {
    const lines = buildLines(
      ret,
      [
        wl('X-1', 'standard', 7200, '2026-10-01'),
        wl('X-1', 'standard', 21600, '2026-10-02'),
        wl('X-2', 'weekend', 10800, '2026-10-03'),
        wl('X-2', 'standard', 3600, '2026-10-04'),
      ],
      [],
      tiers,
    );
    expect(lines.map((l) => [l.line_type, l.tracker_key, l.rate_tier, l.quantity, l.unit_price, l.line_total])).toEqual(
      [
        ['base', null, null, '1.0000', '2000.00', '2000.00'],
        ['task', 'X-1', 'standard', '8.0000', '0.00', '0.00'],
        ['task', 'X-2', 'standard', '1.0000', '0.00', '0.00'],
        ['task', 'X-2', 'weekend', '3.0000', '0.00', '0.00'],
        // 8 h used, the weekend worklog uses the last 2 included hours and its 3rd hour is overtime; all of X-2 standard is.
        ['overtime', null, 'standard', '1.0000', '120.00', '120.00'],
        ['overtime', null, 'weekend', '1.0000', '180.00', '180.00'],
      ],
    );
    const totals = totalsOf(lines);
    expect(totals).toEqual({
      base_amount: '2000.00',
      overtime_hours: '2.0000',
      overtime_amount: '300.00',
      total_amount: '2300.00',
      total_hours: '12.0000',
      is_overtime: true,
    });
    expect(sumOfLines(lines)).toBe(totals.total_amount);
  });

  it('has no overtime at exactly the included hours, and overtime from the first second beyond', () => {
    const exact = buildLines(ret, [wl('X-1', 'standard', 36000)], [], tiers);
    expect(exact.filter((l) => l.line_type === 'overtime')).toEqual([]);
    expect(totalsOf(exact)).toMatchObject({
      is_overtime: false,
      overtime_hours: '0.0000',
      total_amount: '2000.00',
      total_hours: '10.0000',
    });

    const oneMore = buildLines(ret, [wl('X-1', 'standard', 36000), wl('X-1', 'urgent', 1, '2026-10-02')], [], tiers);
    const ot = oneMore.filter((l) => l.line_type === 'overtime');
    // 1 s = 0.0003 h at 150.00 (120 × 1.25) = 0.045 → 0.05
    expect(ot.map((l) => [l.rate_tier, l.quantity, l.unit_price, l.line_total, l.billable_seconds])).toEqual([
      ['urgent', '0.0003', '150.00', '0.05', 1],
    ]);
    expect(totalsOf(oneMore)).toMatchObject({
      is_overtime: true,
      overtime_hours: '0.0003',
      overtime_amount: '0.05',
      total_amount: '2000.05',
    });
  });

  it('consumes fractional included hours exactly', () => {
    // 0.0001 h included = 0.36 s; a 1 s worklog leaves 0.64 s = 0.000177… h → 0.0002 h at 120 = 0.024 → 0.02
    const lines = buildLines(
      app({ deal_type: 'RET', base_amount: '10.00', included_hours: '0.0001', overtime_rate: '120.00' }),
      [wl('Y', 'standard', 1)],
      [],
      tiers,
    );
    expect(lines.find((l) => l.line_type === 'overtime')).toMatchObject({ quantity: '0.0002', line_total: '0.02' });
  });
});

describe('fixed price (FIX) and usage', () => {
  it('bills the base amount and usage, task lines at 0.00, no overtime whatever the hours', () => {
    const usage: UsageRow[] = [
      { metric: 'storage', unit: 'GB', unit_price: '0.080000', quantity: '10.0000', usage_date: '2026-10-01' },
      { metric: 'storage', unit: 'GB', unit_price: '0.080000', quantity: '2.5000', usage_date: '2026-10-15' },
      { metric: 'api calls', unit: '1k', unit_price: '0.333333', quantity: '3.0000', usage_date: '2026-10-20' },
    ];
    const lines = buildLines(
      app({ deal_type: 'FIX', base_amount: '5000.00', included_hours: '1.0000' }),
      [wl('F-1', 'standard', 72000)],
      usage,
      tiers,
    );
    expect(lines.map((l) => [l.line_type, l.description, l.quantity, l.unit_price, l.line_total])).toEqual([
      ['base', 'Fixed price: Shop', '1.0000', '5000.00', '5000.00'],
      ['task', 'work on F-1', '20.0000', '0.00', '0.00'],
      ['usage', 'storage (GB)', '12.5000', '0.08', '1.00'],
      ['usage', 'api calls (1k)', '3.0000', '0.333333', '1.00'],
    ]);
    expect(totalsOf(lines)).toEqual({
      base_amount: '5000.00',
      overtime_hours: '0.0000',
      overtime_amount: '0.00',
      total_amount: '5002.00',
      total_hours: '20.0000',
      is_overtime: false,
    });
  });

  it('keeps the lines summing to the invoice total on many odd lines', () => {
    const many = Array.from({ length: 500 }, (_, i) =>
      wl(`T-${i % 37}`, ['standard', 'weekend', 'urgent'][i % 3]!, 1 + ((i * 7919) % 5000)),
    );
    const lines = buildLines(app({ hourly_rate: '87.35' }), many, [], tiers);
    expect(sumOfLines(lines)).toBe(totalsOf(lines).total_amount);
  });
});
