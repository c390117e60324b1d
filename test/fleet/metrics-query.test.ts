import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { MetricsFixture, type SeededHost } from './metrics-support.ts';

/**
 * POST /metrics/query against the real VictoriaMetrics: the answer is the store's range-query JSON, confined to the
 * named host or environment of a client the caller holds metrics:read on. Every escape the issue lists either comes
 * back with the caller's own series only, or is refused with 400 — never another client's series.
 */

let sys: TestSystem;
let fx: MetricsFixture;
/** Client A: a1, a2 in one environment, a3 in another. Client B: b1. */
let a1: SeededHost;
let a2: SeededHost;
let a3: SeededHost;
let b1: SeededHost;
let engineerA: string;
let engineerB: string;
let clientRoleA: string;

const HOUR = 3_600_000;
const H = Math.floor(Date.now() / HOUR) * HOUR - 12 * HOUR;
const iso = (ms: number): string => new Date(ms).toISOString();
const RANGE = { start: iso(H), end: iso(H + 5 * 60_000), step: '60s' };

interface Series {
  metric: Record<string, string>;
  values: [number, string][];
}

beforeAll(async () => {
  ({ sys } = await startAdminSystem());
  fx = await new MetricsFixture(sys).open();
  a1 = await fx.host();
  a2 = await fx.host({ clientId: a1.client_id, environmentId: a1.environment_id });
  a3 = await fx.host({ clientId: a1.client_id });
  b1 = await fx.host();
  engineerA = (await userWith(sys, 'Engineer', a1.client_id)).token;
  engineerB = (await userWith(sys, 'Engineer', b1.client_id)).token;
  clientRoleA = (await userWith(sys, 'Client', a1.client_id)).token;
  const at = (name: string, value: number) => ({ name, value, time_ms: H, labels: {} });
  await fx.feed(a1.agent_id, [at('cpu_usage_percent', 1), at('memory_usage_percent', 10)]);
  await fx.feed(a2.agent_id, [at('cpu_usage_percent', 2)]);
  await fx.feed(a3.agent_id, [at('cpu_usage_percent', 3)]);
  await fx.feed(b1.agent_id, [at('cpu_usage_percent', 100), at('secret_b', 42)]);
});

afterAll(async () => {
  await fx?.close();
  await sys?.stop();
});

const query = (
  body: Record<string, unknown>,
  token = engineerA,
  url = '/api/v1/metrics/query',
): Promise<LightMyRequestResponse> => api(sys, { token })('POST', url, { ...RANGE, ...body });

/** The streamed answer's series, after checking it is the store's success envelope. */
function seriesOf(res: LightMyRequestResponse): Series[] {
  expectStatus(res, 200);
  expect(res.headers['content-type']).toContain('application/json');
  const body = res.json() as { status: string; data: { resultType: string; result: Series[] } };
  expect(body.status).toBe('success');
  expect(body.data.resultType).toBe('matrix');
  return body.data.result;
}

/** Every series belongs to client A and to `hosts` (when the series carries a host). */
function onlyOwn(result: Series[], hosts: SeededHost[]): void {
  for (const s of result) {
    if (s.metric.client_id !== undefined) expect(s.metric.client_id).toBe(a1.client_id);
    if (s.metric.host_id !== undefined) expect(hosts.map((h) => h.host_id)).toContain(s.metric.host_id);
    for (const [, v] of s.values) expect(['100', '42']).not.toContain(v);
  }
}

const hostsOf = (result: Series[]): string[] => [...new Set(result.map((s) => s.metric.host_id ?? ''))].sort();

describe('POST /metrics/query', () => {
  it("streams the store's range-query JSON for the named host", async () => {
    const result = seriesOf(await query({ query: 'cpu_usage_percent', host_id: a1.host_id }));
    expect(result).toHaveLength(1);
    expect(result[0]!.metric).toMatchObject({
      __name__: 'cpu_usage_percent',
      host_id: a1.host_id,
      client_id: a1.client_id,
    });
    expect(result[0]!.values[0]).toEqual([H / 1000, '1']);
  });

  it('covers every host of a named environment and nothing outside it', async () => {
    const result = seriesOf(await query({ query: 'cpu_usage_percent', environment_id: a1.environment_id }));
    expect(hostsOf(result)).toEqual([a1.host_id, a2.host_id].sort());
    onlyOwn(result, [a1, a2]);
    // The same text for client B: its own series only (no answer is shared between tenants).
    const theirs = seriesOf(await query({ query: 'cpu_usage_percent', environment_id: b1.environment_id }, engineerB));
    expect(hostsOf(theirs)).toEqual([b1.host_id]);
  });

  it('confines `or` with another selector', async () => {
    for (const q of [
      'cpu_usage_percent or secret_b',
      'cpu_usage_percent or {client_id="' + b1.client_id + '"}',
      'secret_b or on() vector(0)',
    ]) {
      const result = seriesOf(await query({ query: q, host_id: a1.host_id }));
      onlyOwn(result, [a1]);
      expect(result.some((s) => s.metric.__name__ === 'secret_b')).toBe(false);
    }
  });

  it('confines regex and negative matchers on the tenant labels', async () => {
    let result = seriesOf(
      await query({ query: '{__name__="cpu_usage_percent", client_id=~".+"}', environment_id: a1.environment_id }),
    );
    expect(hostsOf(result)).toEqual([a1.host_id, a2.host_id].sort());
    result = seriesOf(await query({ query: '{host_id=~".+"}', host_id: a1.host_id }));
    expect(result.map((s) => s.metric.__name__).sort()).toEqual(['cpu_usage_percent', 'memory_usage_percent']);
    onlyOwn(result, [a1]);
    result = seriesOf(
      await query({ query: `cpu_usage_percent{client_id!="${a1.client_id}"}`, environment_id: a1.environment_id }),
    );
    expect(result).toEqual([]);
    result = seriesOf(
      await query({ query: `cpu_usage_percent{host_id="${b1.host_id}"}`, environment_id: a1.environment_id }),
    );
    expect(result).toEqual([]);
  });

  it('refuses label_replace, label_join and count_values writing a tenant label; other labels are fine', async () => {
    for (const q of [
      `label_replace(cpu_usage_percent, "client_id", "${b1.client_id}", "", "")`,
      'label_replace(cpu_usage_percent, "host_id", "$1", "__name__", "(.*)")',
      'label_join(cpu_usage_percent, "environment_id", ",", "host_id")',
      'count_values("client_id", cpu_usage_percent)',
      'label_set(cpu_usage_percent, "client_id", "x")',
    ]) {
      const res = await query({ query: q, host_id: a1.host_id });
      expectStatus(res, 400);
      expect(errorOf(res).code).toBe('bad_request');
    }
    const copied = seriesOf(
      await query({
        query: 'label_replace(cpu_usage_percent, "owner", "$1", "client_id", "(.*)")',
        host_id: a1.host_id,
      }),
    );
    expect(copied[0]!.metric.owner).toBe(a1.client_id);
  });

  it('confines subqueries', async () => {
    const result = seriesOf(
      await query({
        query: 'max_over_time((cpu_usage_percent or secret_b)[10m:1m])',
        environment_id: a1.environment_id,
      }),
    );
    expect(result.map((s) => s.values[0]![1]).sort()).toEqual(['1', '2']);
    onlyOwn(result, [a1, a2]);
  });

  it('refuses absent() over tenant labels; otherwise another client’s series stay invisible to it', async () => {
    for (const q of [
      `absent(cpu_usage_percent{client_id="${b1.client_id}"})`,
      `absent_over_time(secret_b{host_id="${b1.host_id}"}[5m])`,
    ]) {
      expectStatus(await query({ query: q, host_id: a1.host_id }), 400);
    }
    // secret_b exists, but not for this host: absent says 1, with no tenant label.
    const result = seriesOf(await query({ query: 'absent(secret_b)', host_id: a1.host_id }));
    expect(result).toHaveLength(1);
    expect(result[0]!.metric).toEqual({});
    expect(result[0]!.values[0]![1]).toBe('1');
  });

  it('confines count by (client_id) over every series', async () => {
    const result = seriesOf(
      await query({ query: 'count by (client_id) ({__name__=~".+"})', environment_id: a1.environment_id }),
    );
    expect(result.map((s) => s.metric)).toEqual([{ client_id: a1.client_id }]);
    expect(result[0]!.values[0]![1]).toBe('3');
  });

  it('confines a selector of every name to the host', async () => {
    const result = seriesOf(await query({ query: '{__name__=~".+"}', host_id: a1.host_id }));
    expect(result.map((s) => s.metric.__name__).sort()).toEqual(['cpu_usage_percent', 'memory_usage_percent']);
    onlyOwn(result, [a1]);
  });

  it('takes no caller-supplied filters, lookups or other fields, in the body or the URL', async () => {
    const filters = `{client_id="${b1.client_id}"}`;
    for (const extra of [
      { extra_filters: [filters] },
      { 'extra_filters[]': filters },
      { extra_label: `client_id=${b1.client_id}` },
      { 'match[]': 'secret_b' },
      { path: '/api/v1/series' },
      { nocache: '1' },
    ]) {
      const res = await query({ query: 'cpu_usage_percent', host_id: a1.host_id, ...extra });
      expectStatus(res, 400);
      expect(errorOf(res).message).toMatch(/unknown field/);
    }
    const inUrl = await query(
      { query: 'cpu_usage_percent', host_id: a1.host_id },
      engineerA,
      `/api/v1/metrics/query?extra_filters[]=${encodeURIComponent(filters)}`,
    );
    expectStatus(inUrl, 400);
    // Form syntax inside the query text is just text: not PromQL.
    expectStatus(await query({ query: `cpu_usage_percent&extra_filters[]=${filters}`, host_id: a1.host_id }), 400);
    // Series and label-value lookups exist only per host in reach.
    expectStatus(await api(sys, { token: engineerA })('GET', `/api/v1/hosts/${b1.host_id}/metrics`), 404);
    expectStatus(
      await api(sys, { token: engineerA })('GET', `/api/v1/hosts/${b1.host_id}/metrics/secret_b/series`),
      404,
    );
  });

  it('needs metrics:read on the named host or environment: 404 out of reach, 403 without it', async () => {
    expectStatus(await query({ query: 'cpu_usage_percent', host_id: b1.host_id }), 404);
    expectStatus(await query({ query: 'cpu_usage_percent', environment_id: b1.environment_id }), 404);
    expectStatus(
      await query({ query: 'cpu_usage_percent', host_id: a1.host_id, environment_id: b1.environment_id }),
      404,
    );
    expectStatus(await query({ query: 'cpu_usage_percent', host_id: randomUUID() }), 404);
    expectStatus(await query({ query: 'cpu_usage_percent', host_id: a1.host_id }, clientRoleA), 403);
    // Both named: both filters apply (a1 is not in a3's environment).
    expect(
      seriesOf(await query({ query: 'cpu_usage_percent', host_id: a1.host_id, environment_id: a3.environment_id })),
    ).toEqual([]);
  });

  it('refuses bad parameters and queries too large to answer with 400', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ query: 'cpu_usage_percent' }, /host_id or environment_id/],
      [{ host_id: a1.host_id, query: '' }, /query/],
      [
        { host_id: a1.host_id, query: 'cpu_usage_percent', start: iso(H + 60_000), end: iso(H) },
        /start must not be after end/,
      ],
      [{ host_id: a1.host_id, query: 'cpu_usage_percent', start: iso(H - 32 * 24 * HOUR) }, /31 days/],
      [{ host_id: a1.host_id, query: 'cpu_usage_percent', start: 'last week' }, /body\.start/],
      [{ host_id: a1.host_id, query: 'cpu_usage_percent', step: 'often' }, /body\.step/],
      [{ host_id: a1.host_id, query: 'cpu_usage_percent', start: iso(H - 24 * HOUR), step: '1s' }, /points per series/],
      [{ host_id: a1.host_id, query: 'rate(cpu_usage_percent[5m]' }, /not valid PromQL/],
      [{ host_id: a1.host_id, query: 'cpu_usage_percent[40d]' }, /31 days/],
      [{ host_id: a1.host_id, query: 'max_over_time(cpu_usage_percent[1d:1s])' }, /subquery/],
      [{ host_id: a1.host_id, query: `${'cpu_usage_percent + '.repeat(300)}1` }, /4096/],
      [{ host_id: a1.host_id, query: Array.from({ length: 21 }, (_, i) => `m${i}`).join(' or ') }, /selectors/],
      [{ host_id: 'not-a-uuid', query: 'cpu_usage_percent' }, /body\.host_id/],
    ];
    for (const [body, message] of cases) {
      const res = await query(body);
      expectStatus(res, 400);
      expect(errorOf(res).message).toMatch(message);
    }
  });
});
