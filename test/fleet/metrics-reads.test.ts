import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { errorOf, type TestSystem } from '../support/system.ts';
import { apiKeyWith, customRole } from '../events/support.ts';
import { MetricsFixture, series, type SeededHost } from './metrics-support.ts';

/**
 * The metric routes against the real VictoriaMetrics, fed through the real ingest path (agent subject → JetStream →
 * the fleet's consumer → /api/v1/import). Every expected figure is computed by hand from the samples below.
 */

let sys: TestSystem;
/** A super admin's token. */
let root: string;
let fx: MetricsFixture;
/** Client A: `a` (host metrics), `a2` (process and container metrics), `live` (latest values). Client B: `b`. */
let a: SeededHost;
let a2: SeededHost;
let live: SeededHost;
let b: SeededHost;
let engineerA: string;
let clientRoleA: string;
let clientEngineerA: string;
let engineerB: string;

const HOUR = 3_600_000;
const MIN = 60_000;
/** An hour boundary 12 hours ago: every chart sample sits at a known offset from it. */
const H = Math.floor(Date.now() / HOUR) * HOUR - 12 * HOUR;
const iso = (ms: number): string => new Date(ms).toISOString();
const CONTAINER = 'c0ffee'.padEnd(64, '0');
let now: number;

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  fx = await new MetricsFixture(sys).open();
  a = await fx.host();
  a2 = await fx.host({ clientId: a.client_id, environmentId: a.environment_id });
  live = await fx.host({ clientId: a.client_id, environmentId: a.environment_id });
  b = await fx.host();
  engineerA = (await userWith(sys, 'Engineer', a.client_id)).token;
  clientRoleA = (await userWith(sys, 'Client', a.client_id)).token;
  clientEngineerA = (await userWith(sys, 'Client Engineer', a.client_id)).token;
  engineerB = (await userWith(sys, 'Engineer', b.client_id)).token;

  await fx.feed(a.agent_id, [
    // The unlabelled series: bucket [H, H+1m) gets 10, 20, 60; bucket [H+1m, H+2m) gets 5 (exactly on its start) and 7
    // (its last millisecond); one more an hour later.
    ...series('cpu_usage_percent', {}, H, 20_000, [10, 20, 60]),
    { name: 'cpu_usage_percent', value: 5, time_ms: H + MIN, labels: {} },
    { name: 'cpu_usage_percent', value: 7, time_ms: H + 2 * MIN - 1, labels: {} },
    { name: 'cpu_usage_percent', value: 100, time_ms: H + HOUR + 30_000, labels: {} },
    // A per-CPU series of the same name: never part of the unlabelled chart.
    { name: 'cpu_usage_percent', value: 1000, time_ms: H + 10_000, labels: { cpu: '0' } },
    {
      name: 'filesystem_usage_percent',
      value: 42,
      time_ms: H + 5_000,
      labels: { mountpoint: '/data,x', fstype: 'ext4' },
    },
  ]);
  await fx.feed(b.agent_id, [
    { name: 'secret_metric', value: 1, time_ms: H, labels: {} },
    ...series('cpu_usage_percent', {}, H, 20_000, [999, 999, 999]),
  ]);
  await fx.feed(a2.agent_id, [
    ...series('process_cpu_usage', { pid: '42', process_name: 'postgres' }, H, 30_000, [10, 30]),
    { name: 'process_memory_usage', value: 5, time_ms: H, labels: { pid: '42', process_name: 'postgres' } },
    { name: 'process_memory_rss', value: 1000, time_ms: H, labels: { pid: '42', process_name: 'postgres' } },
    { name: 'process_threads', value: 8, time_ms: H, labels: { pid: '42', process_name: 'postgres' } },
    ...series('process_cpu_usage', { pid: '43', process_name: 'nginx' }, H, 30_000, [99, 99]),
    ...series('container_cpu_usage', { container_id: CONTAINER, container_name: 'app' }, H, 30_000, [50, 70]),
    {
      name: 'container_memory_used',
      value: 100,
      time_ms: H,
      labels: { container_id: CONTAINER, container_name: 'app' },
    },
    {
      name: 'container_memory_limit',
      value: 1000,
      time_ms: H,
      labels: { container_id: CONTAINER, container_name: 'app' },
    },
    {
      name: 'container_memory_usage',
      value: 10,
      time_ms: H,
      labels: { container_id: CONTAINER, container_name: 'app' },
    },
    // A cumulative counter with a reset (1300 → 50) between H+10s and H+20s; its predecessor sits before the range.
    ...[
      [-10_000, 1000],
      [0, 1100],
      [10_000, 1300],
      [20_000, 50],
      [30_000, 250],
      [70_000, 650],
    ].map(([dt, v]) => ({
      name: 'container_network_receive',
      value: v!,
      time_ms: H + dt!,
      labels: { container_id: CONTAINER, container_name: 'app' },
    })),
    ...series('container_block_read', { container_id: CONTAINER, container_name: 'app' }, H, 10_000, [0, 0, 0]),
    ...series('container_cpu_usage', { container_id: 'other', container_name: 'other' }, H, 30_000, [1, 1]),
  ]);
  now = Date.now();
  sys.clock.set(now);
  await fx.feed(live.agent_id, [
    { name: 'memory_usage_percent', value: 50, time_ms: now - 5 * MIN, labels: {} },
    { name: 'memory_usage_percent', value: 55, time_ms: now - 2 * MIN, labels: {} },
    { name: 'load_1', value: 3, time_ms: now - 61 * MIN, labels: {} },
    { name: 'cpu_usage_percent', value: 12, time_ms: now - MIN, labels: {} },
    { name: 'cpu_usage_percent', value: 9, time_ms: now - MIN, labels: { cpu: '0' } },
  ]);
  await fx.feed(b.agent_id, [{ name: 'memory_usage_percent', value: 77, time_ms: now - MIN, labels: {} }]);
});

afterAll(async () => {
  await fx?.close();
  await sys?.stop();
});

const point = (time: number, avg: number, min: number, max: number, count: number) => ({
  time: iso(time),
  avg_value: avg,
  min_value: min,
  max_value: max,
  sample_count: count,
});

describe('GET /hosts/:id/metrics and …/series', () => {
  it('lists the distinct metric names of the host only', async () => {
    const res = await api(sys, { token: engineerA })('GET', `/api/v1/hosts/${a.host_id}/metrics`);
    expectStatus(res, 200);
    expect(res.json().data).toEqual(['cpu_usage_percent', 'filesystem_usage_percent']);
  });

  it('lists the labels_key strings of a metric, the empty string included, values escaped', async () => {
    const get = api(sys, { token: engineerA });
    let res = await get('GET', `/api/v1/hosts/${a.host_id}/metrics/cpu_usage_percent/series`);
    expectStatus(res, 200);
    expect(res.json().data).toEqual(['', 'cpu=0']);
    res = await get('GET', `/api/v1/hosts/${a.host_id}/metrics/filesystem_usage_percent/series`);
    expect(res.json().data).toEqual(['fstype=ext4,mountpoint=/data\\,x']);
    res = await get('GET', `/api/v1/hosts/${a.host_id}/metrics/never_sent/series`);
    expect(res.json().data).toEqual([]);
  });
});

describe('GET /hosts/:id/metrics/:metricName', () => {
  const chart = (query: Record<string, string>, token = engineerA, host = a.host_id, metric = 'cpu_usage_percent') =>
    api(sys, { token })('GET', `/api/v1/hosts/${host}/metrics/${metric}?${new URLSearchParams(query).toString()}`);

  it('aggregates the raw samples of each 1-minute bucket, a sample on a boundary in the bucket it starts', async () => {
    const res = await chart({ start: iso(H), end: iso(H + 2 * MIN) });
    expectStatus(res, 200);
    expect(res.json().data).toEqual([point(H, 30, 10, 60, 3), point(H + MIN, 6, 5, 7, 2)]);
  });

  it('gives whole buckets: a start inside a bucket still shows that bucket computed from all its samples', async () => {
    const res = await chart({ start: iso(H + 30_000), end: iso(H + 90_000) });
    expect(res.json().data).toEqual([point(H, 30, 10, 60, 3), point(H + MIN, 6, 5, 7, 2)]);
  });

  it('uses 1-minute buckets for exactly 6 hours and hourly ones from 6 hours and 1 minute', async () => {
    let res = await chart({ start: iso(H), end: iso(H + 6 * HOUR) });
    expect(res.json().data).toEqual([
      point(H, 30, 10, 60, 3),
      point(H + MIN, 6, 5, 7, 2),
      point(H + HOUR, 100, 100, 100, 1),
    ]);
    res = await chart({ start: iso(H), end: iso(H + 6 * HOUR + MIN) });
    expect(res.json().data).toEqual([point(H, 20.4, 5, 60, 5), point(H + HOUR, 100, 100, 100, 1)]);
  });

  it('selects one series by labels_key; the default is the series without labels', async () => {
    const range = { start: iso(H), end: iso(H + 5 * MIN) };
    expect((await chart({ ...range, labels_key: 'cpu=0' })).json().data).toEqual([point(H, 1000, 1000, 1000, 1)]);
    expect((await chart({ ...range, labels_key: 'cpu=9' })).json().data).toEqual([]);
    const fs = await chart(
      { ...range, labels_key: 'mountpoint=/data\\,x,fstype=ext4' },
      engineerA,
      a.host_id,
      'filesystem_usage_percent',
    );
    expect(fs.json().data).toEqual([point(H, 42, 42, 42, 1)]);
    // The unlabelled filesystem series does not exist: nothing, not the labelled one.
    expect((await chart(range, engineerA, a.host_id, 'filesystem_usage_percent')).json().data).toEqual([]);
  });

  it('defaults to the last hour', async () => {
    const res = await chart({});
    expectStatus(res, 200);
    expect(res.json().data).toEqual([]);
  });

  it('refuses bad parameters with 400', async () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ start: iso(H + MIN), end: iso(H) }, 'cpu_usage_percent', /start must not be after end/],
      [{ start: iso(H - 31 * 24 * HOUR - 1), end: iso(H) }, 'cpu_usage_percent', /31 days/],
      [{ start: 'yesterday' }, 'cpu_usage_percent', /querystring\.start/],
      [{ end: '2026-01-01' }, 'cpu_usage_percent', /querystring\.end/],
      [{ labels_key: 'cpu' }, 'cpu_usage_percent', /key=value/],
      [{ labels_key: 'client_id=x' }, 'cpu_usage_percent', /set by the server/],
      [{ labels_key: 'cpu=1,cpu=2' }, 'cpu_usage_percent', /twice/],
      [{}, 'bad-name', /params\.metricName/],
    ];
    for (const [q, metric, message] of cases) {
      const res = await chart(q, engineerA, a.host_id, metric);
      expectStatus(res, 400);
      expect(errorOf(res).code).toBe('bad_request');
      expect(errorOf(res).message).toMatch(message);
    }
  });

  it('needs metrics:read on the host: 404 out of reach, 403 in reach without it', async () => {
    const range = { start: iso(H), end: iso(H + MIN) };
    expectStatus(await chart(range, engineerB), 404);
    expectStatus(await chart(range, engineerA, b.host_id), 404);
    expectStatus(await chart(range, engineerA, randomUUID()), 404);
    const denied = await chart(range, clientRoleA);
    expectStatus(denied, 403);
    expect(errorOf(denied).message).toContain('metrics:read');
    expectStatus(await api(sys, { token: clientRoleA })('GET', `/api/v1/hosts/${a.host_id}/metrics`), 403);
    expectStatus(
      await api(sys, { token: engineerB })('GET', `/api/v1/hosts/${a.host_id}/metrics/cpu_usage_percent/series`),
      404,
    );
  });
});

describe('process and container metrics', () => {
  const range = `start=${encodeURIComponent(iso(H))}&end=${encodeURIComponent(iso(H + 5 * MIN))}`;

  it('answers the four process series of one pid and name, bucketed', async () => {
    const res = await api(sys, { token: clientEngineerA })(
      'GET',
      `/api/v1/hosts/${a2.host_id}/processes/42/metrics?process_name=postgres&${range}`,
    );
    expectStatus(res, 200);
    expect(res.json().data).toEqual({
      cpu_usage: [point(H, 20, 10, 30, 2)],
      memory_usage: [point(H, 5, 5, 5, 1)],
      memory_rss: [point(H, 1000, 1000, 1000, 1)],
      threads: [point(H, 8, 8, 8, 1)],
    });
    // Another name under that pid has no history.
    const other = await api(sys, { token: clientEngineerA })(
      'GET',
      `/api/v1/hosts/${a2.host_id}/processes/42/metrics?process_name=nginx&${range}`,
    );
    expect(other.json().data).toEqual({ cpu_usage: [], memory_usage: [], memory_rss: [], threads: [] });
  });

  it('needs processes:read besides metrics:read, and process_name', async () => {
    const denied = await api(sys, { token: engineerA })(
      'GET',
      `/api/v1/hosts/${a2.host_id}/processes/42/metrics?process_name=postgres`,
    );
    expectStatus(denied, 403);
    expect(errorOf(denied).message).toContain('processes:read');
    expectStatus(
      await api(sys, { token: engineerB })(
        'GET',
        `/api/v1/hosts/${a2.host_id}/processes/42/metrics?process_name=postgres`,
      ),
      404,
    );
    const missing = await api(sys, { token: clientEngineerA })(
      'GET',
      `/api/v1/hosts/${a2.host_id}/processes/42/metrics`,
    );
    expectStatus(missing, 400);
    expect(errorOf(missing).message).toContain('process_name');
    expectStatus(
      await api(sys, { token: clientEngineerA })(
        'GET',
        `/api/v1/hosts/${a2.host_id}/processes/abc/metrics?process_name=x`,
      ),
      400,
    );
  });

  it('answers container gauges as they are and counters as per-second rates across a reset', async () => {
    const res = await api(sys, { token: engineerA })(
      'GET',
      `/api/v1/hosts/${a2.host_id}/containers/${CONTAINER}/metrics?${range}`,
    );
    expectStatus(res, 200);
    expect(res.json().data).toEqual({
      cpu_usage: [point(H, 60, 50, 70, 2)],
      memory_used: [point(H, 100, 100, 100, 1)],
      memory_limit: [point(H, 1000, 1000, 1000, 1)],
      memory_usage: [point(H, 10, 10, 10, 1)],
      // Rates 10, 20, 5 (the reset: 50 counted from zero), 20 in the first minute — 550 over 40 s — then 400 over 40 s.
      network_receive: [point(H, 13.75, 5, 20, 4), point(H + MIN, 10, 10, 10, 1)],
      network_transmit: [],
      block_read: [point(H, 0, 0, 0, 2)],
      block_write: [],
    });
    expectStatus(
      await api(sys, { token: engineerA })('GET', `/api/v1/hosts/${a2.host_id}/containers/bad%20id/metrics`),
      400,
    );
    expectStatus(
      await api(sys, { token: clientRoleA })('GET', `/api/v1/hosts/${a2.host_id}/containers/${CONTAINER}/metrics`),
      403,
    );
  });
});

describe('GET /hosts/metrics/latest', () => {
  const latest = (query: string, token = engineerA) =>
    api(sys, { token })('GET', `/api/v1/hosts/metrics/latest?${query}`);

  it('answers the newest value of the last 60 minutes per host and metric, unlabelled series only', async () => {
    const res = await latest(
      `host_ids=${live.host_id},${b.host_id},${randomUUID()}&metrics=memory_usage_percent,load_1,cpu_usage_percent,bad-name!`,
    );
    expectStatus(res, 200);
    expect(res.json().data).toEqual([
      { host_id: live.host_id, metric_name: 'cpu_usage_percent', value: 12, time: iso(now - MIN) },
      { host_id: live.host_id, metric_name: 'memory_usage_percent', value: 55, time: iso(now - 2 * MIN) },
    ]);
  });

  it('answers nothing for hosts out of reach or without metrics:read, to a caller holding metrics:read elsewhere', async () => {
    expect((await latest(`host_ids=${b.host_id}&metrics=memory_usage_percent`)).json().data).toEqual([]);
    expect((await latest(`host_ids=${live.host_id}&metrics=memory_usage_percent`, engineerB)).json().data).toEqual([]);
    expect((await latest(`host_ids=${b.host_id}&metrics=memory_usage_percent`, engineerB)).json().data).toEqual([
      { host_id: b.host_id, metric_name: 'memory_usage_percent', value: 77, time: iso(now - MIN) },
    ]);
  });

  it('answers 403 to a caller holding metrics:read on no client, as every other metric route', async () => {
    const denied = await latest(`host_ids=${live.host_id}&metrics=memory_usage_percent`, clientRoleA);
    expectStatus(denied, 403);
    expect(errorOf(denied).message).toContain('metrics:read');
    // The service account of the report: clients:read and roles:read only.
    const apiKey = await apiKeyWith(sys, root, await customRole(sys, ['clients:read', 'roles:read']), a.client_id);
    const byKey = await api(sys, { apiKey })(
      'GET',
      `/api/v1/hosts/metrics/latest?host_ids=${live.host_id},${randomUUID()}&metrics=memory_usage_percent`,
    );
    expectStatus(byKey, 403);
    expect(errorOf(byKey).message).toContain('metrics:read');
  });

  it('refuses missing parameters, invalid uuids, no valid name, over 100 hosts or 50 metrics', async () => {
    const hosts = (n: number) => Array.from({ length: n }, () => randomUUID()).join(',');
    const metrics = (n: number) => Array.from({ length: n }, (_, i) => `m_${i}`).join(',');
    const cases: [string, RegExp][] = [
      ['metrics=cpu', /host_ids/],
      [`host_ids=${live.host_id}`, /metrics/],
      [`host_ids=${live.host_id},not-a-uuid&metrics=cpu`, /host_ids.*uuid/],
      [`host_ids=${live.host_id}&metrics=bad-name,9also`, /no valid metric name/],
      [`host_ids=${hosts(101)}&metrics=cpu`, /at most 100 hosts/],
      [`host_ids=${live.host_id}&metrics=${metrics(51)}`, /at most 50 metrics/],
    ];
    for (const [q, message] of cases) {
      const res = await latest(q);
      expectStatus(res, 400);
      expect(errorOf(res).message).toMatch(message);
    }
    expectStatus(await latest(`host_ids=${hosts(100)}&metrics=${metrics(50)}`), 200);
  });
});

describe('a deleted host', () => {
  it('answers 404 on its metric routes at once, though its client was kept from the charts before', async () => {
    const h = await fx.host({ clientId: a.client_id, environmentId: a.environment_id });
    await fx.feed(h.agent_id, [{ name: 'cpu_usage_percent', value: 10, time_ms: H, labels: {} }]);
    const get = api(sys, { token: engineerA });
    const chart = `/api/v1/hosts/${h.host_id}/metrics/cpu_usage_percent?start=${encodeURIComponent(iso(H))}&end=${encodeURIComponent(iso(H + MIN))}`;
    expect((await get('GET', chart)).json().data).toEqual([point(H, 10, 10, 10, 1)]);
    // Kept: a second chart reads no row, and the caller's permission is still checked on it.
    expectStatus(await api(sys, { token: engineerB })('GET', chart), 404);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/hosts/${h.host_id}`), 204);
    for (const path of [
      chart,
      `/api/v1/hosts/${h.host_id}/metrics`,
      `/api/v1/hosts/${h.host_id}/metrics/cpu_usage_percent/series`,
    ]) {
      expectStatus(await get('GET', path), 404);
    }
  });
});

describe('a host moved to another environment', () => {
  it('keeps its history under the old labels; its charts and series lists show both, an environment query its own part', async () => {
    const h = await fx.host({ clientId: a.client_id });
    const T = H + 2 * HOUR;
    await fx.feed(h.agent_id, [{ name: 'cpu_usage_percent', value: 10, time_ms: T, labels: {} }]);
    const moved = await fx.move(h);
    await fx.feed(moved.agent_id, [{ name: 'cpu_usage_percent', value: 30, time_ms: T + 20_000, labels: {} }]);

    const stored = await fx.tsdb.export([`{host_id="${h.host_id}"}`], { start: 0 });
    expect(stored.map((s) => [s.metric.environment_id, s.values]).sort()).toEqual(
      [
        [h.environment_id, [10]],
        [moved.environment_id, [30]],
      ].sort(),
    );
    const get = api(sys, { token: engineerA });
    const chart = await get(
      'GET',
      `/api/v1/hosts/${h.host_id}/metrics/cpu_usage_percent?start=${encodeURIComponent(iso(T))}&end=${encodeURIComponent(iso(T + MIN))}`,
    );
    expect(chart.json().data).toEqual([point(T, 20, 10, 30, 2)]);
    expect((await get('GET', `/api/v1/hosts/${h.host_id}/metrics/cpu_usage_percent/series`)).json().data).toEqual(['']);
    for (const [environment_id, value] of [
      [h.environment_id, '10'],
      [moved.environment_id, '30'],
    ] as const) {
      const res = await get('POST', '/api/v1/metrics/query', {
        query: 'max_over_time(cpu_usage_percent[5m])',
        start: iso(T + MIN),
        end: iso(T + MIN),
        environment_id,
      });
      expectStatus(res, 200);
      expect(
        (res.json() as { data: { result: { values: [number, string][] }[] } }).data.result.map((r) => r.values[0]![1]),
      ).toEqual([value]);
    }
  });
});

describe('a chart after the series of its metric changed', () => {
  it('stays exactly the series of its labels_key when a label name appears after the names were learnt', async () => {
    const h = await fx.host({ clientId: a.client_id, environmentId: a.environment_id });
    const T = H + 3 * HOUR;
    const get = api(sys, { token: engineerA });
    const chartOf = (labelsKey: string) =>
      get(
        'GET',
        `/api/v1/hosts/${h.host_id}/metrics/cpu_usage_percent?${new URLSearchParams({ start: iso(T), end: iso(T + MIN), labels_key: labelsKey }).toString()}`,
      );
    await fx.feed(h.agent_id, [{ name: 'cpu_usage_percent', value: 10, time_ms: T, labels: {} }]);
    // The first chart learns that the metric's series carry no label names.
    expect((await chartOf('')).json().data).toEqual([point(T, 10, 10, 10, 1)]);
    await fx.feed(h.agent_id, [{ name: 'cpu_usage_percent', value: 500, time_ms: T + 1_000, labels: { core: '1' } }]);
    // The selector no longer excludes every other series; the answer is still cut to the unlabelled one.
    for (let i = 0; i < 2; i++) expect((await chartOf('')).json().data).toEqual([point(T, 10, 10, 10, 1)]);
    expect((await chartOf('core=1')).json().data).toEqual([point(T, 500, 500, 500, 1)]);
    expect((await chartOf('core=2')).json().data).toEqual([]);
    // Another client's user: 404 though the names are cached, and nothing of the store's answer.
    expectStatus(
      await api(sys, { token: engineerB })('GET', `/api/v1/hosts/${h.host_id}/metrics/cpu_usage_percent?labels_key=`),
      404,
    );
  });
});
