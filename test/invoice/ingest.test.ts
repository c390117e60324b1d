import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { INGEST_DURABLE, INGEST_SUBJECT } from '../../actors/invoice/analytics/ingest.ts';
import { wireDurableName, wireDurableSubject } from '../../platform/namespace.ts';
import { DlqHeaders, dlqSubjectFor } from '../../contracts/streams.ts';
import { publishDurable } from '../../platform/jetstream.ts';
import type { AnalyticsStore } from '../../actors/invoice/analytics/store.ts';
import { analyticsStore } from '../../actors/invoice/mod.ts';
import { createLogger } from '../../platform/logger.ts';
import { demoBatches } from '../../scripts/seed/demo-data.ts';
import { seedDemo, waitForIngest } from '../../scripts/seed/seed-demo.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let store: AnalyticsStore;
const log = createLogger('silent');

beforeAll(async () => {
  sys = await startTestSystem({ SVC_ACTORS: 'invoice', SVC_GATEWAYS: 'none' });
  store = await analyticsStore(sys.stores, sys.config);
});
afterAll(() => sys?.stop());

const count = async (sql: string): Promise<number> => Number((await store.query<{ n: string }>(sql))[0]?.n);

describe('analytics ingest (svc.work.invoice.analytics_ingest)', () => {
  it('stores a batch once even when it is delivered again, and refuses a malformed one to the dead letters', async () => {
    const tag = sys.tag;
    const batch = {
      batch_id: `t-${tag}`,
      applications: [
        {
          application_key: `T-${tag}`,
          customer_key: `C-${tag}`,
          name: 'Probe',
          is_active: true,
          deal_type: 'TM' as const,
          currency: 'EUR',
          base_amount: '0.00',
          included_hours: '0',
          hourly_rate: '100.00',
          overtime_rate: '0',
        },
      ],
      worklogs: [1, 2, 3].map((i) => ({
        worklog_id: `w-${tag}-${i}`,
        application_key: `T-${tag}`,
        tracker_key: 'T-1',
        worklog_date: '2026-10-0' + i,
        time_seconds: 3600,
        billable_seconds: 3600,
        rate_tier: 'standard',
      })),
    };
    // The same batch three times under different msg ids: JetStream keeps all three, the store one row per id.
    for (const n of [1, 2, 3]) await publishDurable(sys.nc, INGEST_SUBJECT, batch, { msgId: `${batch.batch_id}:${n}` });
    // A batch another system sends with a float amount is malformed: dead-lettered with the field named, nothing stored.
    const raw = {
      batch_id: `bad-${tag}`,
      applications: [{ ...batch.applications[0], application_key: `BAD-${tag}`, hourly_rate: 99.5 }],
    };
    await jetstream(sys.nc).publish(wireDurableSubject(INGEST_SUBJECT), JSON.stringify(raw));
    await waitForIngest(sys.nc, 20_000);
    const dlq = await (
      await jetstreamManager(sys.nc)
    ).streams.getMessage('SVC_DLQ', { last_by_subj: dlqSubjectFor(wireDurableName(INGEST_DURABLE)) });
    expect(dlq?.json<{ batch_id: string }>().batch_id).toBe(`bad-${tag}`);
    expect(dlq?.header.get(DlqHeaders.reason)).toBe('malformed');
    expect(dlq?.header.get(DlqHeaders.error)).toContain('applications.0.hourly_rate');
    expect(await count(`SELECT count() AS n FROM applications FINAL WHERE application_key = 'BAD-${tag}'`)).toBe(0);
    expect(await count(`SELECT count() AS n FROM worklogs FINAL WHERE application_key = 'T-${tag}'`)).toBe(3);
    expect(await count(`SELECT count() AS n FROM applications FINAL WHERE application_key = 'T-${tag}'`)).toBe(1);
    const [app] = await store.query<{ hourly_rate: string; is_active: boolean }>(
      `SELECT toString(hourly_rate) AS hourly_rate, is_active FROM applications FINAL WHERE application_key = 'T-${tag}'`,
    );
    expect(app).toEqual({ hourly_rate: '100', is_active: true });
  });

  it('refuses a batch with a float amount or too many records at the publisher', async () => {
    await expect(
      publishDurable(sys.nc, INGEST_SUBJECT, {
        batch_id: 'bad',
        applications: [
          {
            application_key: 'A',
            customer_key: 'C',
            name: 'n',
            is_active: true,
            deal_type: 'TM',
            currency: 'EUR',
            base_amount: 1.5 as unknown as string,
            included_hours: '0',
            hourly_rate: '1',
            overtime_rate: '0',
          },
        ],
      }),
    ).rejects.toThrow(/base_amount/);
    await expect(
      publishDurable(sys.nc, INGEST_SUBJECT, {
        batch_id: 'big',
        worklogs: Array.from({ length: 2001 }, (_, i) => ({
          worklog_id: `b${i}`,
          application_key: 'A',
          tracker_key: 'T',
          worklog_date: '2026-10-01',
          time_seconds: 1,
          billable_seconds: 1,
          rate_tier: 's',
        })),
      }),
    ).rejects.toThrow(/at most 2000/);
  });

  it('seeds the demo set (>= 50 active apps, inactive ones, 100,000 worklogs over 3 months) and a second run duplicates nothing', async () => {
    const today = '2026-11-22';
    const first = await seedDemo(sys.nc, { today }, log);
    expect(first.worklogs).toBe(100_000);
    const snapshot = async (): Promise<Record<string, number>> => ({
      worklogs: await count(`SELECT count() AS n FROM worklogs FINAL WHERE worklog_id LIKE 'demo-wl-%'`),
      active: await count(
        `SELECT count() AS n FROM applications FINAL WHERE application_key LIKE 'APP-%' AND is_active`,
      ),
      inactive: await count(
        `SELECT count() AS n FROM applications FINAL WHERE application_key LIKE 'APP-%' AND NOT is_active`,
      ),
      deals: await count(`SELECT uniqExact(deal_type) AS n FROM applications FINAL WHERE application_key LIKE 'APP-%'`),
      currencies: await count(
        `SELECT uniqExact(currency) AS n FROM applications FINAL WHERE application_key LIKE 'APP-%'`,
      ),
      usage: await count(`SELECT count() AS n FROM usage_records FINAL WHERE record_id LIKE 'demo-use-%'`),
      tiers: await count(`SELECT count() AS n FROM rate_tiers FINAL`),
      days: await count(
        `SELECT dateDiff('day', min(worklog_date), max(worklog_date)) AS n FROM worklogs FINAL WHERE worklog_id LIKE 'demo-wl-%'`,
      ),
    });
    const a = await snapshot();
    expect(a.worklogs).toBe(100_000);
    expect(a.active).toBeGreaterThanOrEqual(50);
    expect(a.inactive).toBeGreaterThanOrEqual(3);
    expect(a.deals).toBe(3);
    expect(a.currencies).toBeGreaterThanOrEqual(3);
    expect(a.usage).toBeGreaterThan(0);
    expect(a.days).toBeGreaterThanOrEqual(89);
    expect(demoBatches({ today }).length).toBe(first.batches);

    const second = await seedDemo(sys.nc, { today }, log);
    expect(second.batches).toBe(first.batches);
    expect(await snapshot()).toEqual(a);
  }, 240_000);
});
