import { randomUUID } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tsdbBases } from '../../platform/config.ts';
import { Tsdb, type PromMatrix, type PromVector } from '../../actors/fleet/metrics/tsdb.ts';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { testConfig } from '../support/env.ts';
import type { TestSystem } from '../support/system.ts';
import { MetricsFixture, series, type SeededHost } from './metrics-support.ts';

/**
 * VictoriaMetrics' cluster form (SVC_TSDB_WRITE_URL / SVC_TSDB_READ_URL), against the single-node server behind two
 * proxies that play vminsert and vmselect: each forwards only its own path shapes (`/insert/0/prometheus/<rest>`,
 * `/select/0/prometheus/<rest>` and `/delete/0/prometheus/<rest>`) to the server's `/<rest>`, answers its own
 * `/health`, and refuses anything else with 404, as the components do. Every call of the store, and of a started
 * system (the metrics ingest, the chart reads, the tenant PromQL route), must come through the right one; what is read
 * back is what was written.
 */

/** The single-node server behind the proxies (and the test's own way to it: flushing, cleaning up). */
const SINGLE = testConfig().SVC_TSDB_URL;

/** A request a proxy let through: the prefix it came under, the path after it, and its credentials. */
interface Passage {
  via: string;
  path: string;
  authorization: string | undefined;
}

interface ClusterProxy {
  url: string;
  passed: Passage[];
  /** Requests answered 404: a path of no component of this kind. */
  refused: string[];
  stop(): Promise<void>;
}

/** A stand-in for one cluster component: forwards `<prefix>/<rest>` to `target`'s `/<rest>` for its prefixes only. */
async function startClusterProxy(target: string, prefixes: readonly string[]): Promise<ClusterProxy> {
  const to = new URL(target);
  const passed: Passage[] = [];
  const refused: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    const path = url.split('?')[0]!;
    const authorization = req.headers.authorization;
    if (path === '/health') {
      passed.push({ via: '/health', path, authorization });
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
      return;
    }
    const via = prefixes.find((p) => path.startsWith(`${p}/`));
    if (via === undefined) {
      refused.push(`${req.method} ${path}`);
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`unsupported path requested: ${path}`);
      return;
    }
    passed.push({ via, path: path.slice(via.length), authorization });
    const up = request(
      {
        hostname: to.hostname,
        port: to.port,
        method: req.method,
        path: url.slice(via.length),
        headers: { ...req.headers, host: to.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    passed,
    refused,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const INSERT = '/insert/0/prometheus';
const SELECT = '/select/0/prometheus';
const DELETE = '/delete/0/prometheus';

const basic = (user: string, password: string): string =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let vminsert: ClusterProxy;
let vmselect: ClusterProxy;
/** The test's own store on the single-node server: flushes (a cluster has no flush) and clean-up. */
const direct = new Tsdb(SINGLE);

beforeAll(async () => {
  vminsert = await startClusterProxy(SINGLE, [INSERT]);
  vmselect = await startClusterProxy(SINGLE, [SELECT, DELETE]);
});

afterAll(async () => {
  await vminsert?.stop();
  await vmselect?.stop();
});

/** Empties both proxies' records. */
function forget(): void {
  for (const p of [vminsert, vmselect]) {
    p.passed.length = 0;
    p.refused.length = 0;
  }
}

describe('the TSDB bases (tsdbBases)', () => {
  it('are both SVC_TSDB_URL when only it is set (an empty variable counts as unset)', () => {
    const single = 'http://vm.example:8428';
    expect(tsdbBases(testConfig({ SVC_TSDB_URL: single }))).toEqual({ write: single, read: single });
    expect(tsdbBases(testConfig({ SVC_TSDB_URL: single, SVC_TSDB_WRITE_URL: '', SVC_TSDB_READ_URL: '' }))).toEqual({
      write: single,
      read: single,
    });
    expect(tsdbBases(testConfig({}))).toEqual({ write: SINGLE, read: SINGLE });
  });

  it('take SVC_TSDB_WRITE_URL and SVC_TSDB_READ_URL each on its own, and refuse what is not a URL', () => {
    const single = 'http://vm.example:8428';
    const write = 'http://vminsert:8480/insert/0/prometheus';
    const read = 'http://vmselect:8481/select/0/prometheus';
    expect(tsdbBases(testConfig({ SVC_TSDB_URL: single, SVC_TSDB_WRITE_URL: write }))).toEqual({ write, read: single });
    expect(tsdbBases(testConfig({ SVC_TSDB_URL: single, SVC_TSDB_READ_URL: read }))).toEqual({ write: single, read });
    expect(() => testConfig({ SVC_TSDB_READ_URL: 'vmselect 8481' })).toThrow(/SVC_TSDB_READ_URL/);
    // The store takes http(s) only, naming the variable.
    expect(() => new Tsdb({ write: 'ftp://vminsert/insert/0/prometheus', read })).toThrow(
      /SVC_TSDB_WRITE_URL \(or SVC_TSDB_URL\) must be http\(s\), not ftp:/,
    );
    expect(() => new Tsdb({ write, read: 'file:///tmp/x' })).toThrow(/SVC_TSDB_READ_URL .*must be http\(s\)/);
  });

  it("with only SVC_TSDB_URL set, the services' store writes, reads and checks health there, under its path", async () => {
    // A single-node server behind a path (vmauth, say): every call goes under it, as before the cluster form.
    const single = await startClusterProxy(SINGLE, ['/vm']);
    const store = new Tsdb(tsdbBases(testConfig({ SVC_TSDB_URL: `${single.url}/vm` })));
    const name = `svc_single_probe_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    const t = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
    try {
      await store.ping();
      await store.importSeries([{ metric: { __name__: name, client_id: 'a' }, values: [4], timestamps: [t] }]);
      await store.flush();
      expect(await store.export([name], { start: t / 1000 - 60 })).toEqual([
        { metric: { __name__: name, client_id: 'a' }, values: [4], timestamps: [t] },
      ]);
      expect(single.passed.map((p) => `${p.via} ${p.path}`)).toEqual([
        '/vm /health',
        '/vm /api/v1/import',
        '/vm /internal/force_flush',
        '/vm /api/v1/export',
      ]);
      expect(single.refused).toEqual([]);
    } finally {
      await direct.deleteSeries([name]);
      await single.stop();
    }
  });
});

describe('the store against a cluster (vminsert and vmselect bases)', () => {
  const metric = `svc_cluster_probe_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const t0 = Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000;
  const ts = [t0, t0 + 60_000, t0 + 120_000];
  const range = { start: t0 / 1000, end: (t0 + 120_000) / 1000 };
  const writer = basic('vm writer', 'w@1');
  const reader = basic('vm reader', 'r@2');
  let store: Tsdb;

  beforeAll(() => {
    // Through the fleet's own configuration, with credentials in both URLs (Basic authorization, each its own).
    store = new Tsdb(
      tsdbBases(
        testConfig({
          SVC_TSDB_URL: 'http://127.0.0.1:1',
          SVC_TSDB_WRITE_URL: `http://vm%20writer:w%401@${vminsert.url.slice('http://'.length)}${INSERT}`,
          SVC_TSDB_READ_URL: `http://vm%20reader:r%402@${vmselect.url.slice('http://'.length)}${SELECT}/`,
        }),
      ),
    );
    forget();
  });

  afterAll(async () => {
    await direct.flush();
    await direct.deleteSeries([`{__name__=~"${metric}.*"}`]);
  });

  it("checks each component's own /health", async () => {
    await store.ping();
    expect(vminsert.passed).toEqual([{ via: '/health', path: '/health', authorization: writer }]);
    expect(vmselect.passed).toEqual([{ via: '/health', path: '/health', authorization: reader }]);
  });

  it('imports through vminsert and reads back the same data through vmselect, every read endpoint', async () => {
    forget();
    await store.importSeries([
      { metric: { __name__: metric, client_id: 'a', host: 'h1' }, values: [1, 2, 3], timestamps: ts },
      { metric: { __name__: metric, client_id: 'b', host: 'h2' }, values: [10, 20, 30.5], timestamps: ts },
    ]);
    // vminsert has no force_flush (only each vmstorage does): the store says so rather than call a path it lacks.
    await expect(store.flush()).rejects.toThrow(/cluster has no \/internal\/force_flush on vminsert/);
    await direct.flush();

    const matrix = (await store.queryRange({ query: metric, ...range, step: 60, nocache: true })).data as PromMatrix;
    expect([...matrix.result].sort((x, y) => x.metric.client_id!.localeCompare(y.metric.client_id!))).toEqual([
      { metric: { __name__: metric, client_id: 'a', host: 'h1' }, values: ts.map((t, i) => [t / 1000, String(i + 1)]) },
      {
        metric: { __name__: metric, client_id: 'b', host: 'h2' },
        values: ts.map((t, i) => [t / 1000, ['10', '20', '30.5'][i]]),
      },
    ]);
    const raw = await store.queryRangeRaw({ query: metric, ...range, step: 60, extraFilters: ['{client_id="a"}'] });
    expect((JSON.parse(await raw.text()) as { data: PromMatrix }).data.result.map((r) => r.metric.host)).toEqual([
      'h1',
    ]);
    const vector = (await store.query({ query: metric, time: (t0 + 60_000) / 1000, extraFilters: ['{client_id="b"}'] }))
      .data as PromVector;
    expect(vector.result.map((r) => [r.metric.host, r.value[1]])).toEqual([['h2', '20']]);
    expect(await store.series([metric], range.start, range.end, ['{client_id="b"}'])).toEqual([
      { __name__: metric, client_id: 'b', host: 'h2' },
    ]);
    expect((await store.labelValues('host', [metric], range)).sort()).toEqual(['h1', 'h2']);
    expect(await store.export([metric], { extraFilters: ['{client_id="a"}'] })).toEqual([
      { metric: { __name__: metric, client_id: 'a', host: 'h1' }, values: [1, 2, 3], timestamps: ts },
    ]);

    expect(vminsert.passed).toEqual([{ via: INSERT, path: '/api/v1/import', authorization: writer }]);
    expect(vmselect.passed).toEqual(
      [
        '/api/v1/query_range',
        '/api/v1/query_range',
        '/api/v1/query',
        '/api/v1/series',
        '/api/v1/label/host/values',
        '/api/v1/export',
      ].map((path) => ({ via: SELECT, path, authorization: reader })),
    );
    expect([...vminsert.refused, ...vmselect.refused]).toEqual([]);
  });

  it("deletes through vmselect's /delete/0/prometheus", async () => {
    const other = `${metric}_del`;
    await direct.importSeries([{ metric: { __name__: other, client_id: 'a' }, values: [1], timestamps: [t0] }]);
    await direct.flush();
    expect(await store.series([other], range.start, range.end)).toHaveLength(1);
    forget();
    await store.deleteSeries([other]);
    expect(await store.series([other], range.start, range.end)).toEqual([]);
    expect(vmselect.passed.map((p) => `${p.via} ${p.path}`)).toEqual([
      `${DELETE} /api/v1/admin/tsdb/delete_series`,
      `${SELECT} /api/v1/series`,
    ]);
    expect(vminsert.passed).toEqual([]);
    expect([...vminsert.refused, ...vmselect.refused]).toEqual([]);
  });
});

describe('a system configured for a cluster', () => {
  const HOUR = 3_600_000;
  const MIN = 60_000;
  const H = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
  const iso = (ms: number): string => new Date(ms).toISOString();
  let sys: TestSystem;
  let fx: MetricsFixture;
  let host: SeededHost;
  let engineer: string;

  beforeAll(async () => {
    ({ sys } = await startAdminSystem({
      SVC_TSDB_WRITE_URL: `${vminsert.url}${INSERT}`,
      SVC_TSDB_READ_URL: `${vmselect.url}${SELECT}`,
    }));
    // The fixture's own store is SVC_TSDB_URL, which the system no longer uses: the single-node server itself.
    fx = await new MetricsFixture(sys).open();
    host = await fx.host();
    engineer = (await userWith(sys, 'Engineer', host.client_id)).token;
    forget();
    // Through the agent's subject, JetStream and the fleet's ingest: its imports must go to vminsert.
    await fx.feed(host.agent_id, [
      ...series('cpu_usage_percent', {}, H, 20_000, [10, 20, 60]),
      ...series('memory_usage_percent', {}, H, 30_000, [40, 50]),
    ]);
  });

  afterAll(async () => {
    await fx?.close();
    await sys?.stop();
  });

  it('ingests through vminsert only', async () => {
    expect(vminsert.passed.length).toBeGreaterThan(0);
    for (const p of vminsert.passed) expect(p).toMatchObject({ via: INSERT, path: '/api/v1/import' });
    expect(vmselect.passed).toEqual([]);
    // What the single-node server holds is what the agent sent.
    const stored = await direct.export([`{host_id="${host.host_id}"}`], { start: H / 1000 - 60 });
    expect(
      stored
        .map((s) => [s.metric.__name__, s.metric.client_id, s.values, s.timestamps])
        .sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    ).toEqual([
      ['cpu_usage_percent', host.client_id, [10, 20, 60], [H, H + 20_000, H + 40_000]],
      ['memory_usage_percent', host.client_id, [40, 50], [H, H + 30_000]],
    ]);
  });

  /** What `call` sent to the store: the paths vmselect let through (every one under `/select/0/prometheus`). */
  async function reads<T>(call: () => Promise<T>): Promise<{ value: T; paths: string[] }> {
    forget();
    const value = await call();
    expect(vminsert.passed).toEqual([]);
    expect([...vminsert.refused, ...vmselect.refused]).toEqual([]);
    for (const p of vmselect.passed) expect(p.via).toBe(SELECT);
    return { value, paths: vmselect.passed.map((p) => p.path) };
  }

  it("answers the host's metric names and charts through vmselect only", async () => {
    const get = api(sys, { token: engineer });
    const names = await reads(() => get('GET', `/api/v1/hosts/${host.host_id}/metrics`));
    expectStatus(names.value, 200);
    expect(names.value.json().data).toEqual(['cpu_usage_percent', 'memory_usage_percent']);
    expect(names.paths).toEqual(['/api/v1/label/__name__/values']);

    const chart = await reads(() =>
      get(
        'GET',
        `/api/v1/hosts/${host.host_id}/metrics/cpu_usage_percent?start=${encodeURIComponent(iso(H))}&end=${encodeURIComponent(iso(H + 2 * MIN))}`,
      ),
    );
    expectStatus(chart.value, 200);
    expect(chart.value.json().data).toEqual([
      { time: iso(H), avg_value: 30, min_value: 10, max_value: 60, sample_count: 3 },
    ]);
    expect(chart.paths.length).toBeGreaterThan(0);
  });

  it("answers the tenant PromQL route (the gateway's own query_range) through vmselect only", async () => {
    const promql = await reads(() =>
      api(sys, { token: engineer })('POST', '/api/v1/metrics/query', {
        query: 'memory_usage_percent',
        start: iso(H),
        end: iso(H + 2 * MIN),
        step: '30s',
        host_id: host.host_id,
      }),
    );
    expectStatus(promql.value, 200);
    const body = promql.value.json() as { status: string; data: PromMatrix };
    expect(body.status).toBe('success');
    expect(body.data.result).toHaveLength(1);
    expect(body.data.result[0]!.metric).toMatchObject({ __name__: 'memory_usage_percent', host_id: host.host_id });
    expect(body.data.result[0]!.values.slice(0, 2)).toEqual([
      [H / 1000, '40'],
      [(H + 30_000) / 1000, '50'],
    ]);
    expect(promql.paths).toEqual(['/api/v1/query_range']);
  });
});
