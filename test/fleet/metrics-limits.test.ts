import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { MetricsFixture, series, startPrivateTsdb, startTsdbProxy, type SeededHost } from './metrics-support.ts';

/**
 * Limits and upstream failures of the metric routes, against a VictoriaMetrics of this file's own (started with a
 * small -search.maxSamplesPerQuery) behind a proxy that can make it fail: what goes upstream is exactly the service's
 * plan, an expensive query is stopped by the sample limit or the deadline, and a failing store is a 502/503/504 with
 * the envelope, never a hang.
 */

const SAMPLE_LIMIT = 2_000;
const REQUEST_TIMEOUT_MS = 3_000;

let vm: Awaited<ReturnType<typeof startPrivateTsdb>>;
let proxy: Awaited<ReturnType<typeof startTsdbProxy>>;
let sys: TestSystem;
let fx: MetricsFixture;
let host: SeededHost;
let engineer: string;

const HOUR = 3_600_000;
const H = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const iso = (ms: number): string => new Date(ms).toISOString();

beforeAll(async () => {
  vm = await startPrivateTsdb([`-search.maxSamplesPerQuery=${SAMPLE_LIMIT}`]);
  proxy = await startTsdbProxy(vm.url);
  ({ sys } = await startAdminSystem({ SVC_TSDB_URL: proxy.url, SVC_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) }));
  fx = await new MetricsFixture(sys).open();
  host = await fx.host();
  engineer = (await userWith(sys, 'Engineer', host.client_id)).token;
  // 3 series × 1,000 samples, one a second: 3,000 raw samples in the hour after H.
  await fx.feed(
    host.agent_id,
    [0, 1, 2].flatMap((cpu) =>
      series(
        'cpu_usage_percent',
        { cpu: String(cpu) },
        H,
        1_000,
        Array.from({ length: 1_000 }, (_, i) => i % 100),
      ),
    ),
  );
});

afterAll(async () => {
  await fx?.close();
  await sys?.stop();
  await proxy?.stop();
  await vm?.stop();
});

const query = (q: string): Promise<LightMyRequestResponse> =>
  api(sys, { token: engineer })('POST', '/api/v1/metrics/query', {
    query: q,
    start: iso(H),
    end: iso(H + HOUR),
    step: '5m',
    host_id: host.host_id,
  });
const chart = (): Promise<LightMyRequestResponse> =>
  api(sys, { token: engineer })(
    'GET',
    `/api/v1/hosts/${host.host_id}/metrics/cpu_usage_percent?labels_key=cpu%3D0&start=${encodeURIComponent(iso(H))}&end=${encodeURIComponent(iso(H + HOUR))}`,
  );
const names = (): Promise<LightMyRequestResponse> =>
  api(sys, { token: engineer })('GET', `/api/v1/hosts/${host.host_id}/metrics`);

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await f();
  return { value, ms: Date.now() - t0 };
}

describe('metric query limits', () => {
  it('sends upstream only the plan: the canonical query, one tenant filter, a timeout inside the deadline, no cache', async () => {
    proxy.seen.length = 0;
    expectStatus(await query('sum(rate(cpu_usage_percent{cpu="1"}[5m]))'), 200);
    const sent = proxy.seen.at(-1)!;
    expect(sent.path).toBe('/api/v1/query_range');
    expect(sent.form.map(([k]) => k).sort()).toEqual([
      'end',
      'extra_filters[]',
      'nocache',
      'query',
      'start',
      'step',
      'timeout',
    ]);
    const form = Object.fromEntries(sent.form);
    expect(form.query).toBe('sum (rate({__name__="cpu_usage_percent", cpu="1"}[300000ms]))');
    expect(form['extra_filters[]']).toBe(`{client_id="${host.client_id}",host_id="${host.host_id}"}`);
    expect(form.nocache).toBe('1');
    expect(Number(/^(\d+)ms$/.exec(form.timeout!)?.[1])).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS);
    expect([form.start, form.end, form.step]).toEqual([String(H / 1000), String((H + HOUR) / 1000), '300']);
  });

  it("stops an expensive query at the store's sample limit with a 400 naming it", async () => {
    const res = await query('sum(count_over_time(cpu_usage_percent[1h]))');
    expectStatus(res, 400);
    expect(errorOf(res).message).toMatch(
      /exceeds a limit of the metrics store: .*cannot select more than -search\.maxSamplesPerQuery=2000 samples/,
    );
    // One series stays under it.
    expectStatus(await query('count_over_time(cpu_usage_percent{cpu="0"}[1h])'), 200);
  });

  it('answers a store that never answers with 504 at the deadline, on every route', async () => {
    proxy.mode = { kind: 'hang' };
    try {
      for (const call of [() => query('cpu_usage_percent'), chart, names]) {
        const { value: res, ms } = await timed(call);
        expectStatus(res, 504);
        expect(errorOf(res).code).toBe('gateway_timeout');
        expect(ms).toBeLessThan(REQUEST_TIMEOUT_MS + 1_500);
      }
    } finally {
      proxy.mode = { kind: 'forward' };
    }
  });

  it("answers the store's own query timeout with 504", async () => {
    const vmTimeout = JSON.stringify({
      status: 'error',
      errorType: '422',
      error:
        'error when executing query="count({__name__=~\\".+\\"})" on the time range (start=1, end=2, step=60000): cannot execute query: timeout exceeded while fetching data block #379980 from storage: 0.001 seconds (elapsed 1.815 seconds)',
    });
    proxy.mode = { kind: 'status', status: 422, body: vmTimeout };
    try {
      const res = await query('cpu_usage_percent');
      expectStatus(res, 504);
      expect(errorOf(res).message).toMatch(/time limit/);
    } finally {
      proxy.mode = { kind: 'forward' };
    }
  });

  it('answers an unreachable store 503, an overloaded one 503 and a failing one 502, with the envelope', async () => {
    const cases: [typeof proxy.mode, number, string][] = [
      [{ kind: 'refuse' }, 503, 'service_unavailable'],
      [{ kind: 'status', status: 503, body: 'too many concurrent requests' }, 503, 'service_unavailable'],
      [{ kind: 'status', status: 429, body: 'slow down' }, 503, 'service_unavailable'],
      [{ kind: 'status', status: 500, body: 'panic' }, 502, 'bad_gateway'],
    ];
    try {
      for (const [mode, status, code] of cases) {
        proxy.mode = mode;
        for (const call of [() => query('cpu_usage_percent'), chart, names]) {
          const res = await call();
          expectStatus(res, status);
          expect(errorOf(res).code).toBe(code);
          expect(errorOf(res).request_id).toBeTruthy();
        }
      }
    } finally {
      proxy.mode = { kind: 'forward' };
    }
    expectStatus(await chart(), 200);
  });
});
