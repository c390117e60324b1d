import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect } from 'vitest';
import { INGEST_SUBJECT } from '../../actors/invoice/analytics/ingest.ts';
import { publishDurable } from '../../platform/jetstream.ts';
import { waitForIngest } from '../../scripts/seed/seed-demo.ts';
import { createUser, tokenFor } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The invoicing test fixture: the whole system, a super admin, and a small analytics data set (ingested through the
 * real ingest subject) whose figures are computed by hand in the tests: a retainer (RET), a time-and-materials (TM)
 * and an inactive fixed-price (FIX) application of one customer, with October 2026 worklogs. The clock stands at
 * 2026-11-15, so the default prefill period is October 2026.
 */
export type Json = Record<string, unknown>;
export interface InvoiceFixture {
  sys: TestSystem;
  root: string;
  rootEmail: string;
  tag: string;
  keys: { ret: string; tm: string; fix: string; cust: string; std: string; wkd: string; urg: string };
}

export async function startInvoiceFixture(overrides: Record<string, string> = {}): Promise<InvoiceFixture> {
  const sys = await startTestSystem(overrides);
  sys.clock.set(Date.parse('2026-11-15T12:00:00Z'));
  const tag = sys.tag;
  const keys = {
    ret: `RET-${tag}`,
    tm: `TM-${tag}`,
    fix: `FIX-${tag}`,
    cust: `CUST-${tag}`,
    std: `std-${tag}`,
    wkd: `wkd-${tag}`,
    urg: `urg-${tag}`,
  };
  const admin = await createUser(sys, { superAdmin: true });
  const root = await tokenFor(sys, admin);

  const app = (key: string, deal: 'RET' | 'TM' | 'FIX', over: Json) => ({
    application_key: key,
    customer_key: keys.cust,
    name: `App ${key}`,
    is_active: true,
    deal_type: deal,
    currency: 'EUR',
    base_amount: '0.00',
    included_hours: '0',
    hourly_rate: '95.00',
    overtime_rate: '0',
    ...over,
  });
  let n = 0;
  const wl = (
    application_key: string,
    tracker_key: string,
    rate_tier: string,
    billable_seconds: number,
    worklog_date: string,
  ) => ({
    worklog_id: `wl-${tag}-${++n}`,
    application_key,
    tracker_key,
    description: `Work on ${tracker_key}`,
    author: 'anna',
    worklog_date,
    time_seconds: billable_seconds,
    billable_seconds,
    rate_tier,
  });
  await publishDurable(sys.nc, INGEST_SUBJECT, {
    batch_id: `fixture-${tag}`,
    customers: [
      {
        customer_key: keys.cust,
        name: 'Acme <Logistics> GmbH',
        email: 'billing@acme.example',
        address: 'Hafenstraße 12, Hamburg',
        country: 'DE',
        vat_id: 'DE123',
      },
    ],
    rate_tiers: [
      { rate_tier: keys.std, name: 'Standard', multiplier: '1.0000' },
      { rate_tier: keys.wkd, name: 'Weekend', multiplier: '1.5000' },
      { rate_tier: keys.urg, name: 'Urgent', multiplier: '1.2500' },
    ],
    applications: [
      app(keys.ret, 'RET', { base_amount: '2000.00', included_hours: '10.0000', overtime_rate: '120.00' }),
      app(keys.tm, 'TM', {}),
      app(keys.fix, 'FIX', { is_active: false, base_amount: '5000.00' }),
    ],
    worklogs: [
      wl(keys.ret, 'X-1', keys.std, 7200, '2026-10-01'),
      wl(keys.ret, 'X-1', keys.std, 21600, '2026-10-02'),
      wl(keys.ret, 'X-2', keys.wkd, 10800, '2026-10-03'),
      wl(keys.ret, 'X-2', keys.std, 3600, '2026-10-04'),
      wl(keys.ret, 'X-9', keys.std, 63000, '2026-11-01'), // outside October: 17.5 h
      wl(keys.tm, 'A-1', keys.std, 5400, '2026-10-10'),
      wl(keys.tm, 'B-2', keys.urg, 1800, '2026-10-31'),
    ],
  });
  await waitForIngest(sys.nc, 20_000);
  return { sys, root, rootEmail: admin.email, tag, keys };
}

/**
 * One invoice system per test file, started before its tests and stopped after them: `const t = useInvoiceFixture();`
 * then `t.fx`, `t.sys` and `t.call(…)` inside the tests.
 */
export function useInvoiceFixture(overrides: Record<string, string> = {}): {
  readonly fx: InvoiceFixture;
  readonly sys: TestSystem;
  call: ReturnType<typeof caller>;
} {
  let fx: InvoiceFixture | undefined;
  const get = (): InvoiceFixture => {
    if (!fx) throw new Error('the invoice fixture is used before beforeAll started it');
    return fx;
  };
  beforeAll(async () => {
    fx = await startInvoiceFixture(overrides);
  });
  afterAll(() => fx?.sys.stop());
  return {
    get fx() {
      return get();
    },
    get sys() {
      return get().sys;
    },
    call: caller(get),
  };
}

/** HTTP against the invoicing gateway as `token` (the super admin by default; null sends none). */
export function caller(f: () => InvoiceFixture) {
  return (
    method: 'GET' | 'POST' | 'PATCH' | 'PUT',
    url: string,
    payload?: unknown,
    token: string | null = f().root,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> =>
    f().sys.invoicingHttp({
      method,
      url,
      headers,
      ...(payload !== undefined ? { payload: payload as Json } : {}),
      ...(token !== null ? { token } : {}),
    });
}

export const expectStatus = (res: LightMyRequestResponse, status: number): void => {
  if (res.statusCode !== status) expect.fail(`expected ${status}, got ${res.statusCode}: ${res.body}`);
};
export const data = <T = Json>(res: LightMyRequestResponse): T => (res.json() as { data: T }).data;
