import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, userWith } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import {
  createEnvironment,
  createHost,
  createReceiver,
  customRole,
  deliver,
  environmentScoped,
  eventually,
  fixture,
  githubSignature,
  startEventsSystem,
  statusOfCall,
  userWithRole,
} from './support.ts';

/**
 * Chart markers (docs/api/events.md#chart-markers): each rule as its own test. Alert groups and
 * deploys are inserted directly where a test needs exact times; the last tests feed them through the receivers.
 */

let sys: TestSystem;
let root: string;
let c: string;
let e1: string;
let e2: string;
let h1: string;
let h2: string;
let h3: string;
let reader: string;

const HOUR = 3_600_000;
/** Times relative to the system's clock ("now" for unresolved alerts). */
const rel = (hours: number): string => new Date(sys.clock.now() + hours * HOUR).toISOString();

interface AlertMarker {
  id: string;
  name: string;
  severity: string;
  status: string;
  fired_at: string;
  resolved_at: string | null;
  host_id: string | null;
}
interface DeployMarker {
  id: string;
  at: string;
  source: string;
  event_type: string;
  summary: string;
  app: string;
  revision: string;
  url: string | null;
  failed: boolean;
}

async function alert(opts: {
  fired: string;
  resolved?: string | null;
  status?: 'firing' | 'resolved';
  env?: string | null;
  host?: string | null;
  client?: string;
  name?: string;
}): Promise<string> {
  const id = randomUUID();
  const status = opts.status ?? (opts.resolved ? 'resolved' : 'firing');
  await sys.sql(
    `INSERT INTO alert_groups (id, client_id, environment_id, host_id, group_key, name, severity, status, fired_at, resolved_at, last_notified_at) VALUES (?, ?, ?, ?, ?, ?, 'warning', ?, ?, ?, now())`,
    [
      id,
      opts.client ?? c,
      opts.env ?? null,
      opts.host ?? null,
      `k-${id}`,
      opts.name ?? 'TestAlert',
      status,
      opts.fired,
      opts.resolved ?? null,
    ],
  );
  return id;
}

async function deploy(opts: {
  at: string;
  env?: string | null;
  client?: string;
  summary?: string;
  source?: string;
  type?: string;
  failed?: boolean;
}): Promise<string> {
  const id = randomUUID();
  await sys.sql(
    `INSERT INTO deploys (id, client_id, environment_id, source, event_type, summary, app, revision, url, failed, at, dedupe_key) VALUES (?, ?, ?, ?, ?, ?, 'app', 'rev', null, ?, ?, ?)`,
    [
      id,
      opts.client ?? c,
      opts.env ?? null,
      opts.source ?? 'argocd',
      opts.type ?? 'sync_succeeded',
      opts.summary ?? 'deployed',
      opts.failed ?? false,
      opts.at,
      `test:${id}`,
    ],
  );
  return id;
}

async function markers(
  token: string,
  target: string,
  start: string,
  end: string,
  types?: string,
): Promise<{ alerts: AlertMarker[]; deploys: DeployMarker[] }> {
  const res = await api(sys, { token })(
    'GET',
    `/api/v1/chart-markers?${target}&start=${encodeURIComponent(start)}&end=${encodeURIComponent(end)}${types ? `&types=${types}` : ''}`,
  );
  expectStatus(res, 200);
  return res.json().data as { alerts: AlertMarker[]; deploys: DeployMarker[] };
}
const alertIds = async (target: string, start: string, end: string): Promise<string[]> =>
  (await markers(reader, target, start, end)).alerts.map((a) => a.id);
const deployIds = async (target: string, start: string, end: string): Promise<string[]> =>
  (await markers(reader, target, start, end)).deploys.map((d) => d.id);

beforeAll(async () => {
  ({ sys, root } = await startEventsSystem());
  c = (await createClient(sys)).id;
  e1 = await createEnvironment(sys, c, 'Production');
  e2 = await createEnvironment(sys, c, 'Staging');
  h1 = await createHost(sys, c, e1, 'web-1');
  h2 = await createHost(sys, c, e1, 'web-2');
  h3 = await createHost(sys, c, e2, 'stage-1');
  reader = (await userWith(sys, 'Client Engineer', c)).token; // metrics:read, alerts:read, changes:read
});
afterAll(() => sys?.stop());

describe('alert windows overlapping the range', () => {
  it('includes a group fired before the range and resolved inside it', async () => {
    const id = await alert({ host: h1, env: e1, fired: rel(-100), resolved: rel(-49) });
    expect(await alertIds(`host_id=${h1}`, rel(-50), rel(-40))).toContain(id);
  });

  it('includes a group fired inside the range and resolved after it', async () => {
    const id = await alert({ host: h1, env: e1, fired: rel(-45), resolved: rel(-30) });
    expect(await alertIds(`host_id=${h1}`, rel(-50), rel(-40))).toContain(id);
  });

  it('includes a group fired exactly at the end and one resolved exactly at the start', async () => {
    const atEnd = await alert({ host: h1, env: e1, fired: rel(-140), resolved: rel(-130) });
    const atStart = await alert({ host: h1, env: e1, fired: rel(-160), resolved: rel(-150) });
    const got = await alertIds(`host_id=${h1}`, rel(-150), rel(-140));
    expect(got).toEqual(expect.arrayContaining([atEnd, atStart]));
  });

  it('leaves out a group resolved before the range and one fired after it', async () => {
    const before = await alert({ host: h1, env: e1, fired: rel(-300), resolved: rel(-251) });
    const after = await alert({ host: h1, env: e1, fired: rel(-239), resolved: rel(-230) });
    const got = await alertIds(`host_id=${h1}`, rel(-250), rel(-240));
    expect(got).not.toContain(before);
    expect(got).not.toContain(after);
  });

  it('treats an unresolved group as lasting until now', async () => {
    const open = await alert({ host: h2, env: e1, fired: rel(-500) });
    expect(await alertIds(`host_id=${h2}`, rel(-400), rel(-390))).toContain(open);
    // A range that starts after now is not reached by it.
    expect(await alertIds(`host_id=${h2}`, rel(1), rel(2))).not.toContain(open);
    const shown = (await markers(reader, `host_id=${h2}`, rel(-400), rel(-390))).alerts.find((a) => a.id === open)!;
    expect(shown).toMatchObject({ status: 'firing', resolved_at: null });
  });

  it('ends a group marked resolved without a resolved time at its first fired time', async () => {
    const early = await alert({ host: h2, env: e1, fired: rel(-610), status: 'resolved' });
    const inside = await alert({ host: h2, env: e1, fired: rel(-605), status: 'resolved' });
    const got = await alertIds(`host_id=${h2}`, rel(-606), rel(-600));
    expect(got).not.toContain(early);
    expect(got).toContain(inside);
  });
});

describe('which alerts a chart shows', () => {
  let onH1: string;
  let onH2: string;
  let onE1: string;
  let onH3: string;
  let clientWide: string;
  const S = -1000;
  const E = -990;
  beforeAll(async () => {
    onH1 = await alert({ host: h1, env: e1, fired: rel(-995) });
    onH2 = await alert({ host: h2, env: e1, fired: rel(-995) });
    onE1 = await alert({ env: e1, fired: rel(-995) });
    onH3 = await alert({ host: h3, env: e2, fired: rel(-995) });
    clientWide = await alert({ fired: rel(-995) });
  });

  it("shows only the host's own alerts on a host chart", async () => {
    expect(
      (await alertIds(`host_id=${h1}`, rel(S), rel(E))).filter((id) =>
        [onH1, onH2, onE1, onH3, clientWide].includes(id),
      ),
    ).toEqual([onH1]);
  });

  it("shows an environment's alerts, its hosts' included, on its chart, and not the client-wide ones", async () => {
    expect(
      (await alertIds(`environment_id=${e1}`, rel(S), rel(E)))
        .filter((id) => [onH1, onH2, onE1, onH3, clientWide].includes(id))
        .sort(),
    ).toEqual([onH1, onH2, onE1].sort());
  });

  it('shows client-wide alerts (no environment, no host) on the client chart only', async () => {
    expect(await alertIds(`client_id=${c}`, rel(S), rel(E))).toEqual(
      expect.arrayContaining([onH1, onH2, onE1, onH3, clientWide]),
    );
    expect(await alertIds(`environment_id=${e2}`, rel(S), rel(E))).not.toContain(clientWide);
    expect(await alertIds(`host_id=${h3}`, rel(S), rel(E))).not.toContain(clientWide);
  });

  it('keeps the newest 200 alerts, oldest first', async () => {
    const h = await createHost(sys, c, e2, 'noisy');
    const values = Array.from(
      { length: 210 },
      (_, i) =>
        `('${randomUUID()}', '${c}', '${e2}', '${h}', 'k${i}-${randomUUID()}', 'n${i}', 'info', 'resolved', '${rel(-2000 + i / 100)}', '${rel(-2000 + i / 100 + 0.001)}', now())`,
    );
    await sys.sql(
      `INSERT INTO alert_groups (id, client_id, environment_id, host_id, group_key, name, severity, status, fired_at, resolved_at, last_notified_at) VALUES ${values.join(',')}`,
    );
    const got = (await markers(reader, `host_id=${h}`, rel(-2001), rel(-1990))).alerts;
    expect(got).toHaveLength(200);
    expect(got[0]!.name).toBe('n10');
    expect(got.at(-1)!.name).toBe('n209');
    expect(got.map((a) => a.fired_at)).toEqual([...got.map((a) => a.fired_at)].sort());
  });
});

describe('deploys', () => {
  it('returns deploys inside the range, with every field, oldest first', async () => {
    const inside = await deploy({ env: e1, at: rel(-3005), source: 'github', type: 'release', summary: 'released v1' });
    const later = await deploy({ env: e1, at: rel(-3001), source: 'gitlab', type: 'tag', failed: false });
    const outside = await deploy({ env: e1, at: rel(-3011) });
    const got = (await markers(reader, `host_id=${h1}`, rel(-3010), rel(-3000))).deploys;
    expect(got.map((d) => d.id)).toEqual([inside, later]);
    expect(got.map((d) => d.id)).not.toContain(outside);
    expect(Object.keys(got[0]!).sort()).toEqual([
      'app',
      'at',
      'event_type',
      'failed',
      'id',
      'revision',
      'source',
      'summary',
      'url',
    ]);
    expect(got[0]).toMatchObject({
      source: 'github',
      event_type: 'release',
      summary: 'released v1',
      failed: false,
      url: null,
    });
  });

  it('puts client-wide deploys (no environment) on every chart of the client', async () => {
    const wide = await deploy({ at: rel(-3105) });
    for (const target of [
      `host_id=${h1}`,
      `host_id=${h3}`,
      `environment_id=${e1}`,
      `environment_id=${e2}`,
      `client_id=${c}`,
    ]) {
      expect(await deployIds(target, rel(-3110), rel(-3100))).toContain(wide);
    }
  });

  it("shows an environment's deploys on its charts and its hosts', not on the other environment's", async () => {
    const onE1 = await deploy({ env: e1, at: rel(-3205) });
    expect(await deployIds(`host_id=${h2}`, rel(-3210), rel(-3200))).toContain(onE1);
    expect(await deployIds(`environment_id=${e1}`, rel(-3210), rel(-3200))).toContain(onE1);
    expect(await deployIds(`client_id=${c}`, rel(-3210), rel(-3200))).toContain(onE1);
    expect(await deployIds(`environment_id=${e2}`, rel(-3210), rel(-3200))).not.toContain(onE1);
    expect(await deployIds(`host_id=${h3}`, rel(-3210), rel(-3200))).not.toContain(onE1);
  });

  it('keeps the newest 100 deploys, oldest first', async () => {
    const env = await createEnvironment(sys, c, 'busy');
    const values = Array.from(
      { length: 105 },
      (_, i) =>
        `('${randomUUID()}', '${c}', '${env}', 'argocd', 'sync_succeeded', 's${i}', 'app', 'r', false, '${rel(-4000 + i / 100)}', 'bulk-${randomUUID()}')`,
    );
    await sys.sql(
      `INSERT INTO deploys (id, client_id, environment_id, source, event_type, summary, app, revision, failed, at, dedupe_key) VALUES ${values.join(',')}`,
    );
    const got = (await markers(reader, `environment_id=${env}`, rel(-4001), rel(-3990))).deploys;
    expect(got).toHaveLength(100);
    expect(got[0]!.summary).toBe('s5');
    expect(got.at(-1)!.summary).toBe('s104');
  });
});

describe('who sees which markers', () => {
  it('needs metrics:read on the target: 403 without it, 404 out of reach', async () => {
    const noMetrics = (await userWith(sys, 'Client', c)).token;
    const res = await api(sys, { token: noMetrics })(
      'GET',
      `/api/v1/chart-markers?client_id=${c}&start=${rel(-1)}&end=${rel(0)}`,
    );
    expectStatus(res, 403);
    const other = await createClient(sys);
    const outsider = (await userWith(sys, 'Client Engineer', other.id)).token;
    for (const target of [`host_id=${h1}`, `environment_id=${e1}`, `client_id=${c}`]) {
      expectStatus(
        await api(sys, { token: outsider })('GET', `/api/v1/chart-markers?${target}&start=${rel(-1)}&end=${rel(0)}`),
        404,
      );
    }
  });

  it('answers a type the caller cannot read with an empty list and 200 (alerts:read, changes:read)', async () => {
    await alert({ host: h1, env: e1, fired: rel(-5005) });
    await deploy({ env: e1, at: rel(-5005) });
    const viewer = (await userWith(sys, 'Viewer', c)).token; // metrics:read only
    expect(await markers(viewer, `host_id=${h1}`, rel(-5010), rel(-5000))).toEqual({ alerts: [], deploys: [] });
    const alertsOnly = (await userWithRole(sys, await customRole(sys, ['metrics:read', 'alerts:read']), c)).token;
    const got = await markers(alertsOnly, `host_id=${h1}`, rel(-5010), rel(-5000));
    expect(got.alerts.length).toBeGreaterThan(0);
    expect(got.deploys).toEqual([]);
    const both = await markers(reader, `host_id=${h1}`, rel(-5010), rel(-5000));
    expect(both.alerts.length).toBeGreaterThan(0);
    expect(both.deploys.length).toBeGreaterThan(0);
  });

  it('shows client-wide deploys and client-wide alerts to readers with environment-scoped grants, and nothing of other environments', async () => {
    const wideDeploy = await deploy({ at: rel(-6005) });
    const wideAlert = await alert({ fired: rel(-6005), resolved: rel(-6004) });
    const e1Alert = await alert({ env: e1, host: h1, fired: rel(-6005) });
    const e2Alert = await alert({ env: e2, host: h3, fired: rel(-6005) });
    const e2Deploy = await deploy({ env: e2, at: rel(-6005) });
    const user = await userWithRole(sys, await customRole(sys, []), c);
    const ctx = environmentScoped(user, {
      [e1]: { client_id: c, permissions: ['metrics:read', 'alerts:read', 'changes:read'] },
    });
    const read = (target: Record<string, string>) =>
      sys.caller.call(
        'svc.events.chart_markers',
        { ...target, start: rel(-6010), end: rel(-6000), types: ['alerts', 'deploys'] },
        ctx,
      );
    const onHost = await read({ host_id: h1 });
    expect(onHost.deploys.map((d) => d.id)).toContain(wideDeploy);
    const onClient = await read({ client_id: c });
    expect(onClient.alerts.map((a) => a.id)).toEqual(expect.arrayContaining([wideAlert, e1Alert]));
    expect(onClient.alerts.map((a) => a.id)).not.toContain(e2Alert);
    expect(onClient.deploys.map((d) => d.id)).toContain(wideDeploy);
    expect(onClient.deploys.map((d) => d.id)).not.toContain(e2Deploy);
    expect(await statusOfCall(read({ environment_id: e2 }))).toBe(404);
  });
});

describe('the query', () => {
  it('takes exactly one target, start and end, a range of at most 30 days, and known types', async () => {
    const call = api(sys, { token: reader });
    const q = (s: string) => call('GET', `/api/v1/chart-markers?${s}`);
    const start = '2026-01-01T00:00:00Z';
    expectStatus(await q(`host_id=${h1}&start=${start}&end=2026-01-31T00:00:00Z`), 200);
    const long = await q(`host_id=${h1}&start=${start}&end=2026-01-31T00:00:01Z`);
    expectStatus(long, 400);
    expect(long.json().error.message).toContain('30 days');
    expectStatus(await q(`start=${start}&end=2026-01-02T00:00:00Z`), 400);
    expectStatus(await q(`host_id=${h1}&environment_id=${e1}&start=${start}&end=2026-01-02T00:00:00Z`), 400);
    expectStatus(await q(`host_id=${h1}&start=${start}`), 400);
    expectStatus(await q(`host_id=${h1}&start=2026-01-02T00:00:00Z&end=${start}`), 400);
    expectStatus(await q(`host_id=${h1}&start=${start}&end=2026-01-02T00:00:00Z&types=alerts,incidents`), 400);
    expectStatus(await q(`host_id=${h1}&start=${start}&end=2026-01-02T00:00:00Z&types=`), 400);
    expectStatus(await q(`host_id=${h1}&start=${start}&end=2026-01-02T00:00:00Z&types=deploys,%20alerts`), 200);
  });

  it('returns only the types asked for', async () => {
    await alert({ host: h1, env: e1, fired: rel(-7005) });
    await deploy({ env: e1, at: rel(-7005) });
    const onlyDeploys = await markers(reader, `host_id=${h1}`, rel(-7010), rel(-7000), 'deploys');
    expect(onlyDeploys.alerts).toEqual([]);
    expect(onlyDeploys.deploys.length).toBe(1);
    const onlyAlerts = await markers(reader, `host_id=${h1}`, rel(-7010), rel(-7000), 'alerts');
    expect(onlyAlerts.deploys).toEqual([]);
    expect(onlyAlerts.alerts.length).toBe(1);
  });
});

describe('fed by the receivers', () => {
  it('shows an Alertmanager group firing, then resolved, and a GitHub release, on the charts', async () => {
    const web = await createHost(sys, c, e1, 'web-1.northwind.internal');
    const source = await createReceiver(sys, root, 'alert-sources', { client_id: c, name: 'prom' });
    const hook = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: c,
      environment_id: e1,
      source: 'github',
      name: 'gh',
      secret: 's',
    });
    const start = '2026-11-20T00:00:00Z';
    const end = '2026-11-22T00:00:00Z';
    expectStatus(await deliver(sys, source.path, fixture('alertmanager/firing.json')), 202);
    const firing = await eventually(
      () => markers(reader, `host_id=${web}`, start, end, 'alerts'),
      (m) => m.alerts.length === 1,
      'firing marker',
    );
    expect(firing.alerts[0]).toMatchObject({
      name: 'HighCPULoad',
      severity: 'critical',
      status: 'firing',
      fired_at: '2026-11-21T14:12:30.418Z',
      resolved_at: null,
      host_id: web,
    });
    expect(Object.keys(firing.alerts[0]!).sort()).toEqual([
      'fired_at',
      'host_id',
      'id',
      'name',
      'resolved_at',
      'severity',
      'status',
    ]);
    expectStatus(await deliver(sys, source.path, fixture('alertmanager/resolved.json')), 202);
    const resolved = await eventually(
      () => markers(reader, `host_id=${web}`, start, end, 'alerts'),
      (m) => m.alerts[0]?.status === 'resolved',
      'resolved marker',
    );
    expect(resolved.alerts[0]).toMatchObject({ resolved_at: '2026-11-21T14:47:30.418Z' });

    const body = fixture('github/release-published.json');
    expectStatus(
      await deliver(sys, hook.path, body, {
        'x-github-event': 'release',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': githubSignature('s', body),
      }),
      202,
    );
    const deploys = await eventually(
      () => markers(reader, `host_id=${web}`, start, end, 'deploys'),
      (m) => m.deploys.length === 1,
      'deploy marker',
    );
    expect(deploys.deploys[0]).toMatchObject({
      source: 'github',
      event_type: 'release',
      app: 'northwind/shop-api',
      revision: 'v2.14.0',
      at: '2026-11-20T10:01:17.000Z',
      failed: false,
    });
  });
});
