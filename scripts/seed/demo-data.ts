import type { AnalyticsBatchIn } from '../../contracts/domains/invoice-ingest.ts';
import { seededRandom } from '../../platform/seeded-random.ts';

/**
 * The demo data set of `npm run seed:demo`: deterministic (a fixed PRNG seed), so a second run produces the same
 * natural ids and the analytics store keeps one row per id (ReplacingMergeTree). Dates are relative to `today`:
 * 100,000 worklogs spread over the 92 days before it, so the default prefill period (the previous calendar month)
 * always has data. A worklog's application never changes between runs (its id is (application, index) in the key).
 */

export interface DemoOptions {
  /** `YYYY-MM-DD`, the last day with worklogs. */
  today: string;
  worklogs?: number;
  activeApplications?: number;
  inactiveApplications?: number;
  batchSize?: number;
}

export const DEMO_DEFAULTS = {
  worklogs: 100_000,
  activeApplications: 55,
  inactiveApplications: 5,
  batchSize: 2_000,
} as const;
const DAYS = 92;

const CUSTOMERS = [
  ['Acme Logistics GmbH', 'DE', 'Hafenstraße 12, 20457 Hamburg'],
  ['Blue Harbor Foods Ltd', 'GB', '21 Quay Street, Bristol BS1 4DB'],
  ['Cedar & Pine Outdoor Inc.', 'US', '400 Market St, Portland, OR 97204'],
  ['Delta Fintech AG', 'CH', 'Bahnhofstrasse 45, 8001 Zürich'],
  ['Evergreen Health BV', 'NL', 'Keizersgracht 300, 1016 EZ Amsterdam'],
  ['Fjord Media AS', 'NO', 'Karl Johans gate 8, 0154 Oslo'],
  ['Granite Insurance SE', 'DE', 'Maximilianstraße 3, 80539 München'],
  ['Helios Energy SA', 'FR', '18 rue de la Paix, 75002 Paris'],
  ['Ionic Retail LLC', 'US', '1200 Peachtree St, Atlanta, GA 30309'],
  ['Juniper Travel Ltd', 'GB', '5 King Street, Manchester M2 4LQ'],
  ['Kestrel Robotics Oy', 'FI', 'Mannerheimintie 10, 00100 Helsinki'],
  ['Lumen Education gGmbH', 'DE', 'Unter den Linden 6, 10117 Berlin'],
] as const;
const CURRENCY_OF: Record<string, string> = {
  DE: 'EUR',
  NL: 'EUR',
  FR: 'EUR',
  FI: 'EUR',
  GB: 'GBP',
  US: 'USD',
  CH: 'CHF',
  NO: 'EUR',
};
const PRODUCTS = [
  'Web Shop',
  'Mobile App',
  'Data Platform',
  'Customer Portal',
  'Booking Engine',
  'Intranet',
  'Payments API',
  'Analytics Dashboard',
  'CRM Integration',
  'Support Desk',
];
const TASKS = [
  'Fix checkout rounding',
  'Upgrade framework',
  'Add SSO login',
  'Improve search ranking',
  'Nightly export job',
  'Accessibility review',
  'Refactor billing module',
  'Performance tuning',
  'Security patching',
  'New report: monthly KPIs',
  'Database migration',
  'Release coordination',
  'Incident follow-up',
  'API rate limiting',
  'Cache invalidation bug',
  'Onboarding flow redesign',
];
const AUTHORS = [
  'anna.schmidt',
  'ben.carter',
  'chloe.martin',
  'david.kim',
  'elena.rossi',
  'felix.wagner',
  'grace.lee',
  'hugo.dubois',
  'ines.garcia',
  'jonas.berg',
];
export const DEMO_TIERS = [
  { rate_tier: 'standard', name: 'Standard hours', multiplier: '1.0000' },
  { rate_tier: 'after_hours', name: 'After hours', multiplier: '1.5000' },
  { rate_tier: 'weekend', name: 'Weekend', multiplier: '2.0000' },
  { rate_tier: 'urgent', name: 'Urgent response', multiplier: '1.2500' },
  { rate_tier: 'junior', name: 'Junior staff', multiplier: '0.8000' },
] as const;
const DEALS = ['RET', 'TM', 'FIX', 'RET', 'TM'] as const;

const addDays = (iso: string, n: number): string =>
  new Date(Date.parse(`${iso}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
const pad = (n: number, w: number): string => String(n).padStart(w, '0');

/** The batches, master data first. */
export function demoBatches(opts: DemoOptions): AnalyticsBatchIn[] {
  const o = { ...DEMO_DEFAULTS, ...opts };
  const rnd = seededRandom(13);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;

  const customers = CUSTOMERS.map(([name, country, address], i) => ({
    customer_key: `CUST-${pad(i + 1, 3)}`,
    name,
    email: `billing@${name
      .toLowerCase()
      .replace(/[^a-z]+/g, '-')
      .replace(/^-|-$/g, '')}.example`,
    address,
    country,
    vat_id: `${country}${pad(100000000 + i * 7919, 9)}`,
  }));
  const total = o.activeApplications + o.inactiveApplications;
  const applications = Array.from({ length: total }, (_, i) => {
    const customer = customers[i % customers.length]!;
    const deal = DEALS[i % DEALS.length]!;
    const hourly = 80 + (i % 9) * 5;
    return {
      application_key: `APP-${pad(i + 1, 3)}`,
      customer_key: customer.customer_key,
      name: `${PRODUCTS[i % PRODUCTS.length]} (${customer.name.split(' ')[0]})`,
      // The last few are inactive: kept for history, skipped by generate-bulk.
      is_active: i < o.activeApplications,
      deal_type: deal,
      currency: CURRENCY_OF[customer.country] ?? 'EUR',
      base_amount: deal === 'TM' ? '0.00' : `${1500 + (i % 7) * 500}.00`,
      included_hours: deal === 'RET' ? `${20 + (i % 4) * 10}.0000` : '0.0000',
      hourly_rate: `${hourly}.00`,
      overtime_rate: deal === 'RET' ? `${hourly + 25}.00` : '0.00',
    };
  });
  const batches: AnalyticsBatchIn[] = [
    { batch_id: 'demo-master', customers, applications, rate_tiers: [...DEMO_TIERS] },
  ];

  const tierWeights = [
    'standard',
    'standard',
    'standard',
    'standard',
    'standard',
    'standard',
    'after_hours',
    'weekend',
    'urgent',
    'junior',
  ] as const;
  let batch: NonNullable<AnalyticsBatchIn['worklogs']> = [];
  let n = 0;
  const flush = (kind: string): void => {
    if (batch.length === 0) return;
    n += 1;
    batches.push({ batch_id: `demo-${kind}-${pad(n, 4)}`, worklogs: batch });
    batch = [];
  };
  for (let i = 0; i < o.worklogs; i++) {
    // Active applications get most of the work; inactive ones a little (their last weeks).
    const appIndex =
      rnd() < 0.97
        ? Math.floor(rnd() * o.activeApplications)
        : o.activeApplications + Math.floor(rnd() * Math.max(o.inactiveApplications, 1));
    const application = applications[Math.min(appIndex, total - 1)]!;
    const task = Math.floor(rnd() * 24);
    const time = 900 * (1 + Math.floor(rnd() * 24)); // 15 min to 6 h in quarter hours
    const billable = rnd() < 0.1 ? Math.floor(time / 2) : time;
    const project = application.application_key.replace('APP-', 'P');
    batch.push({
      worklog_id: `demo-wl-${pad(i + 1, 6)}`,
      application_key: application.application_key,
      tracker_key: `${project}-${100 + task}`,
      linked_issue_key: rnd() < 0.3 ? `SUP-${1000 + Math.floor(rnd() * 900)}` : '',
      description: TASKS[(task + appIndex) % TASKS.length]!,
      author: pick(AUTHORS),
      worklog_date: addDays(o.today, -Math.floor(rnd() * DAYS)),
      time_seconds: time,
      billable_seconds: billable,
      rate_tier: pick(tierWeights),
    });
    if (batch.length >= o.batchSize) flush('worklogs');
  }
  flush('worklogs');

  // Usage: every third active application meters storage and API calls daily.
  let usage: NonNullable<AnalyticsBatchIn['usage_records']> = [];
  let u = 0;
  for (const application of applications.filter((a, i) => a.is_active && i % 3 === 0)) {
    for (let d = 0; d < DAYS; d++) {
      const day = addDays(o.today, -d);
      usage.push({
        record_id: `demo-use-${application.application_key}-storage-${d}`,
        application_key: application.application_key,
        metric: 'Storage',
        unit: 'GB-day',
        usage_date: day,
        quantity: `${20 + (d % 5)}.5000`,
        unit_price: '0.025000',
      });
      usage.push({
        record_id: `demo-use-${application.application_key}-api-${d}`,
        application_key: application.application_key,
        metric: 'API requests',
        unit: '1k',
        usage_date: day,
        quantity: `${100 + ((d * 37) % 50)}.0000`,
        unit_price: '0.004500',
      });
      if (usage.length >= o.batchSize) {
        u += 1;
        batches.push({ batch_id: `demo-usage-${pad(u, 4)}`, usage_records: usage });
        usage = [];
      }
    }
  }
  if (usage.length > 0) batches.push({ batch_id: `demo-usage-${pad(u + 1, 4)}`, usage_records: usage });
  return batches;
}
