import type { AnalyticsStore } from './store.ts';

/**
 * Reads of the analytics model (actors/invoice/analytics/migrations: 0002_invoicing_model). Every read uses FINAL so a record
 * ingested twice counts once. Decimals come back as strings (exact) and are parsed by the amounts module.
 */

export interface ApplicationRow {
  application_key: string;
  customer_key: string;
  name: string;
  is_active: boolean;
  deal_type: string;
  currency: string;
  base_amount: string;
  included_hours: string;
  hourly_rate: string;
  overtime_rate: string;
}

export interface CustomerRow {
  customer_key: string;
  name: string;
  email: string;
  address: string;
  country: string;
  vat_id: string;
}

export interface WorklogRow {
  worklog_id: string;
  tracker_key: string;
  linked_issue_key: string;
  description: string;
  worklog_date: string;
  time_seconds: number;
  billable_seconds: number;
  rate_tier: string;
}

export interface UsageRow {
  metric: string;
  unit: string;
  unit_price: string;
  quantity: string;
  usage_date: string;
}

export interface Period {
  start: string;
  end: string;
}

const APP_COLUMNS =
  'application_key, customer_key, name, is_active, deal_type, currency, toString(base_amount) AS base_amount, toString(included_hours) AS included_hours, toString(hourly_rate) AS hourly_rate, toString(overtime_rate) AS overtime_rate';

/** The analytics data of one application for one period, everything the amounts module needs. */
export interface ApplicationPeriodData {
  application: ApplicationRow;
  customer: CustomerRow | undefined;
  worklogs: WorklogRow[];
  usage: UsageRow[];
}

export class AnalyticsReader {
  private readonly store: AnalyticsStore;
  constructor(store: AnalyticsStore) {
    this.store = store;
  }

  async application(key: string): Promise<ApplicationRow | undefined> {
    const [row] = await this.store.query<ApplicationRow>(
      `SELECT ${APP_COLUMNS} FROM applications FINAL WHERE application_key = {key:String}`,
      { key },
    );
    return row;
  }

  /** Active applications, by key (generate-bulk). */
  async activeApplications(): Promise<ApplicationRow[]> {
    return this.store.query<ApplicationRow>(
      `SELECT ${APP_COLUMNS} FROM applications FINAL WHERE is_active ORDER BY application_key`,
    );
  }

  async customers(keys: readonly string[]): Promise<Map<string, CustomerRow>> {
    if (keys.length === 0) return new Map();
    const rows = await this.store.query<CustomerRow>(
      `SELECT customer_key, name, email, address, country, vat_id FROM customers FINAL WHERE customer_key IN {keys:Array(String)}`,
      {
        keys: [...new Set(keys)],
      },
    );
    return new Map(rows.map((r) => [r.customer_key, r]));
  }

  /** Multiplier of every rate tier, as decimal strings. */
  async rateTiers(): Promise<Map<string, string>> {
    const rows = await this.store.query<{ rate_tier: string; multiplier: string }>(
      `SELECT rate_tier, toString(multiplier) AS multiplier FROM rate_tiers FINAL`,
    );
    return new Map(rows.map((r) => [r.rate_tier, r.multiplier]));
  }

  /** Worklogs of several applications in a period, grouped by application, in consumption order (date, id). */
  async worklogs(keys: readonly string[], period: Period): Promise<Map<string, WorklogRow[]>> {
    const out = new Map<string, WorklogRow[]>();
    if (keys.length === 0) return out;
    // The date leaves as text under another name: an alias equal to the column would shadow it in WHERE.
    const rows = await this.store.query<Omit<WorklogRow, 'worklog_date'> & { application_key: string; day: string }>(
      `SELECT application_key, worklog_id, tracker_key, linked_issue_key, description, toString(worklog_date) AS day, time_seconds, billable_seconds, rate_tier
       FROM worklogs FINAL
       WHERE application_key IN {keys:Array(String)} AND worklog_date BETWEEN {start:Date} AND {end:Date}
       ORDER BY application_key, worklog_date, worklog_id`,
      { keys: [...new Set(keys)], start: period.start, end: period.end },
    );
    for (const { application_key, day, ...w } of rows) {
      let list = out.get(application_key);
      if (!list) out.set(application_key, (list = []));
      list.push({
        ...w,
        worklog_date: day,
        time_seconds: Number(w.time_seconds),
        billable_seconds: Number(w.billable_seconds),
      });
    }
    return out;
  }

  /** Usage records of several applications in a period, grouped by application. */
  async usage(keys: readonly string[], period: Period): Promise<Map<string, UsageRow[]>> {
    const out = new Map<string, UsageRow[]>();
    if (keys.length === 0) return out;
    const rows = await this.store.query<Omit<UsageRow, 'usage_date'> & { application_key: string; day: string }>(
      `SELECT application_key, metric, unit, toString(unit_price) AS unit_price, toString(quantity) AS quantity, toString(usage_date) AS day
       FROM usage_records FINAL
       WHERE application_key IN {keys:Array(String)} AND usage_date BETWEEN {start:Date} AND {end:Date}
       ORDER BY application_key, usage_date, record_id`,
      { keys: [...new Set(keys)], start: period.start, end: period.end },
    );
    for (const { application_key, day, ...u } of rows) {
      let list = out.get(application_key);
      if (!list) out.set(application_key, (list = []));
      list.push({ ...u, usage_date: day });
    }
    return out;
  }

  /** Everything one application's invoice for `period` is built from; undefined for an unknown application. */
  async forApplication(key: string, period: Period): Promise<ApplicationPeriodData | undefined> {
    const application = await this.application(key);
    if (!application) return undefined;
    const [customers, worklogs, usage] = await Promise.all([
      this.customers([application.customer_key]),
      this.worklogs([key], period),
      this.usage([key], period),
    ]);
    return {
      application,
      customer: customers.get(application.customer_key),
      worklogs: worklogs.get(key) ?? [],
      usage: usage.get(key) ?? [],
    };
  }
}
