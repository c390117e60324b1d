import type { DealType } from '../../../contracts/domains/invoice-fields.ts';
import type { ApplicationRow, UsageRow, WorklogRow } from '../analytics/reader.ts';
import { Dec, dec, hours, hoursOf, lineTotalOf, money, multiplier, price, unitPriceOf } from './policy.ts';

/** A stored line's fields, as the amounts module and the invoice store both handle them (decimal strings). */
export interface LineFields {
  line_type: string;
  description: string;
  tracker_key: string | null;
  time_seconds: number;
  billable_seconds: number;
  unit_price: string;
  quantity: string;
  line_total: string;
  rate_tier: string | null;
  rate_multiplier: string;
  source: 'analytics' | 'manual';
  is_auto_generated: boolean;
  sort_order: number;
  linked_issue_key: string | null;
  worklog_date: string | null;
}

/** A line as the amounts module builds it from analytics data. */
export interface ComputedLine extends LineFields {
  line_type: 'base' | 'task' | 'overtime' | 'usage';
  source: 'analytics';
  is_auto_generated: true;
}

/**
 * Deal types (the `deal_type` short codes, docs/api/invoicing.md#amounts-and-the-rounding-policy):
 * - RET, retainer: the base amount buys `included_hours` a period; task lines show the work (priced 0.00, covered by
 *   the base); billable time beyond the included hours is overtime at `overtime_rate × tier multiplier`. Worklogs use
 *   up the included hours in order of (worklog_date, worklog_id); the one that crosses the limit is split.
 * - TM, time and materials: no base; every task line is `hours × hourly_rate × tier multiplier`; no overtime.
 * - FIX, fixed price: the base amount only; task lines show the work at 0.00; no overtime.
 * Usage records are billed on every deal type: `quantity × unit_price`, one line per (metric, unit, unit price).
 * A worklog whose rate tier is unknown counts with multiplier 1 (and says so in the line's rate_tier).
 */
export function buildLines(
  app: ApplicationRow,
  worklogs: readonly WorklogRow[],
  usage: readonly UsageRow[],
  tiers: ReadonlyMap<string, string>,
): ComputedLine[] {
  const deal = app.deal_type as DealType;
  const lines: ComputedLine[] = [];
  const multiplierOf = (tier: string): Dec => dec(tiers.get(tier) ?? '1');

  if (deal === 'RET' || deal === 'FIX') {
    lines.push(
      line({
        line_type: 'base',
        description: deal === 'RET' ? `Retainer: ${app.name}` : `Fixed price: ${app.name}`,
        quantity: dec(1),
        unit: dec(app.base_amount),
      }),
    );
  }

  // Task lines: one per (tracker_key, rate_tier), ordered by tracker key then tier.
  interface Group {
    tracker_key: string;
    rate_tier: string;
    description: string;
    linked_issue_key: string;
    last_date: string;
    time: number;
    billable: number;
  }
  const groups = new Map<string, Group>();
  for (const w of worklogs) {
    const key = `${w.tracker_key}\u0000${w.rate_tier}`;
    const g = groups.get(key);
    if (!g) {
      groups.set(key, {
        tracker_key: w.tracker_key,
        rate_tier: w.rate_tier,
        description: w.description,
        linked_issue_key: w.linked_issue_key,
        last_date: w.worklog_date,
        time: w.time_seconds,
        billable: w.billable_seconds,
      });
    } else {
      g.time += w.time_seconds;
      g.billable += w.billable_seconds;
      if (w.worklog_date > g.last_date) g.last_date = w.worklog_date;
    }
  }
  const sorted = [...groups.values()].sort((a, b) =>
    a.tracker_key === b.tracker_key ? cmp(a.rate_tier, b.rate_tier) : cmp(a.tracker_key, b.tracker_key),
  );
  for (const g of sorted) {
    const m = multiplierOf(g.rate_tier);
    const unit = deal === 'TM' ? unitPriceOf(app.hourly_rate, m) : dec(0);
    lines.push(
      line({
        line_type: 'task',
        description: g.description || g.tracker_key,
        tracker_key: g.tracker_key,
        quantity: hoursOf(g.billable),
        unit,
        time_seconds: g.time,
        billable_seconds: g.billable,
        rate_tier: g.rate_tier,
        m,
        linked_issue_key: g.linked_issue_key || null,
        worklog_date: g.last_date,
      }),
    );
  }

  // Usage lines: one per (metric, unit, unit price), in first-seen order (records come sorted by date, id).
  const usageGroups = new Map<string, { metric: string; unit: string; unit_price: string; quantity: Dec }>();
  for (const u of usage) {
    const key = `${u.metric}\u0000${u.unit}\u0000${dec(u.unit_price).toString()}`;
    const g = usageGroups.get(key);
    if (g) g.quantity = g.quantity.add(u.quantity);
    else usageGroups.set(key, { metric: u.metric, unit: u.unit, unit_price: u.unit_price, quantity: dec(u.quantity) });
  }
  for (const g of usageGroups.values()) {
    lines.push(
      line({
        line_type: 'usage',
        description: g.unit ? `${g.metric} (${g.unit})` : g.metric,
        quantity: g.quantity,
        unit: dec(g.unit_price),
      }),
    );
  }

  if (deal === 'RET') {
    // Overtime seconds per tier: worklogs consume the included seconds in (date, id) order.
    let left = dec(app.included_hours).mul(3600);
    const overtime = new Map<string, Dec>();
    for (const w of worklogs) {
      const billable = dec(w.billable_seconds);
      const over = left.gte(billable) ? dec(0) : billable.sub(Dec.max(left, 0));
      left = left.sub(billable);
      if (over.gt(0)) overtime.set(w.rate_tier, (overtime.get(w.rate_tier) ?? dec(0)).add(over));
    }
    for (const tier of [...overtime.keys()].sort(cmp)) {
      const seconds = overtime.get(tier)!;
      const q = hoursOf(seconds);
      if (q.isZero()) continue;
      const m = multiplierOf(tier);
      lines.push(
        line({
          line_type: 'overtime',
          description: `Overtime beyond ${hours(dec(app.included_hours))} included hours (${tier})`,
          quantity: q,
          unit: unitPriceOf(app.overtime_rate, m),
          billable_seconds: seconds.toDecimalPlaces(0, Dec.ROUND_HALF_UP).toNumber(),
          rate_tier: tier,
          m,
        }),
      );
    }
  }
  return lines.map((l, i) => ({ ...l, sort_order: i }));
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function line(p: {
  line_type: ComputedLine['line_type'];
  description: string;
  quantity: Dec;
  unit: Dec;
  tracker_key?: string | null;
  time_seconds?: number;
  billable_seconds?: number;
  rate_tier?: string | null;
  m?: Dec;
  linked_issue_key?: string | null;
  worklog_date?: string | null;
}): ComputedLine {
  return {
    line_type: p.line_type,
    description: p.description,
    tracker_key: p.tracker_key ?? null,
    time_seconds: p.time_seconds ?? 0,
    billable_seconds: p.billable_seconds ?? 0,
    unit_price: price(p.unit),
    quantity: hours(p.quantity),
    line_total: money(lineTotalOf(p.quantity, p.unit)),
    rate_tier: p.rate_tier ?? null,
    rate_multiplier: multiplier(p.m ?? dec(1)),
    source: 'analytics',
    is_auto_generated: true,
    sort_order: 0,
    linked_issue_key: p.linked_issue_key ?? null,
    worklog_date: p.worklog_date ?? null,
  };
}
