import { jetstream } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upsertIntegrations } from '../../actors/fleet/inventory/integrations-store.ts';
import type { IntegrationReport } from '../../contracts/domains/agent-telemetry.ts';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { enrolledHost, realisticSnapshot, store, type TestHost } from './inventory-support.ts';

let sys: TestSystem;
let root: string;
let clientA: string;
let clientB: string;
let a1: TestHost;
let a2: TestHost;
let b1: TestHost;
/** Engineer (integrations:read) on A, on B; Viewer on A (hosts:read only). */
let engineerA: string;
let engineerB: string;
let viewerA: string;
/** Integration types only agents reported, one per client (unknown to the catalogue). */
let privateA: string;
let privateB: string;

interface Type {
  id: string;
  name: string;
  category: string;
  description: string;
  host_count: number;
  status_summary: { ok: number; warning: number; error: number; unknown: number };
}
interface Record_ {
  id: string;
  host_id: string;
  integration_id: string;
  collector_name: string;
  status: string;
  status_message: string;
  enabled: boolean;
  config: Record<string, { value: unknown; unit?: string; source: string; category: string }>;
  hostname: string;
  last_seen_at: string;
}

const T = new Date(Date.UTC(2026, 10, 22, 12, 0, 0));
const minutes = (m: number): Date => new Date(T.getTime() + m * 60_000);
const PG_CONFIG = {
  max_connections: { value: 200, source: 'postgresql.conf', category: 'connections' },
  shared_buffers: { value: 4096, unit: 'MB', source: 'postgresql.conf', category: 'memory' },
};

/** A snapshot carrying exactly `integrations` (the rest of the inventory small). */
const snapshotWith = (at: Date, hostname: string, integrations: IntegrationReport[]) => ({
  ...realisticSnapshot({ collectedAt: at, hostname, packages: 3, processes: 3 }),
  integrations,
});
const report = (
  integration_id: string,
  status: IntegrationReport['status'],
  extra: Partial<IntegrationReport> = {},
): IntegrationReport => ({
  integration_id,
  collector_name: `${integration_id}-collector`,
  status,
  status_message: '',
  enabled: true,
  ...extra,
});

async function heartbeat(host: TestHost, reports: IntegrationReport[], at: Date): Promise<void> {
  const orm = await sys.stores.orm();
  await upsertIntegrations(orm.em.fork(), { id: host.host_id, client_id: host.client_id }, reports, at);
}

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  clientA = (await createClient(sys)).id;
  clientB = (await createClient(sys)).id;
  a1 = await enrolledHost(sys, clientA, 'alpha-1');
  a2 = await enrolledHost(sys, clientA, 'alpha-2');
  b1 = await enrolledHost(sys, clientB, 'beta-1');
  privateA = `acme-${sys.tag}`;
  privateB = `bank-${sys.tag}`;
  await store(
    sys,
    a1,
    snapshotWith(minutes(0), 'alpha-1', [report('postgresql', 'ok', { config: PG_CONFIG }), report('redis', 'ok')]),
    minutes(0),
  );
  await store(
    sys,
    a2,
    snapshotWith(minutes(0), 'alpha-2', [
      report('postgresql', 'error', { status_message: 'connection refused' }),
      report(privateA, 'warning'),
    ]),
    minutes(0),
  );
  await store(
    sys,
    b1,
    snapshotWith(minutes(0), 'beta-1', [report('postgresql', 'warning'), report(privateB, 'ok')]),
    minutes(0),
  );
  engineerA = (await userWith(sys, 'Engineer', clientA)).token;
  engineerB = (await userWith(sys, 'Engineer', clientB)).token;
  viewerA = (await userWith(sys, 'Viewer', clientA)).token;
});
afterAll(() => sys?.stop());

describe('integrations', () => {
  it('keeps the config across reports that carry none, replaces it when one does, and never lets an older report win', async () => {
    const h = await enrolledHost(sys);
    await store(
      sys,
      h,
      snapshotWith(minutes(0), 'cfg', [report('postgresql', 'ok', { config: PG_CONFIG })]),
      minutes(0),
    );
    const row = async () =>
      (
        await sys.sql<{ status: string; config: unknown; config_at: string | null; seen_at: string }>(
          `SELECT status, config, to_char(config_updated_at AT TIME ZONE 'UTC', 'HH24:MI') AS config_at, to_char(last_seen_at AT TIME ZONE 'UTC', 'HH24:MI') AS seen_at
             FROM host_integrations WHERE host_id = ? AND integration_id = 'postgresql'`,
          [h.host_id],
        )
      )[0];
    expect(await row()).toEqual({ status: 'ok', config: PG_CONFIG, config_at: '12:00', seen_at: '12:00' });

    // Heartbeats between two config rounds: status moves, config stays.
    await heartbeat(h, [report('postgresql', 'warning', { status_message: 'replication lag' })], minutes(1));
    expect(await row()).toEqual({ status: 'warning', config: PG_CONFIG, config_at: '12:00', seen_at: '12:01' });
    // A snapshot without config for it keeps it too.
    await store(sys, h, snapshotWith(minutes(2), 'cfg', [report('postgresql', 'ok')]), minutes(2));
    expect(await row()).toEqual({ status: 'ok', config: PG_CONFIG, config_at: '12:00', seen_at: '12:02' });
    // The next config round replaces it whole (a parameter that is gone is gone).
    const next = { max_connections: { value: 300, source: 'ALTER SYSTEM', category: 'connections' } };
    await heartbeat(h, [report('postgresql', 'ok', { config: next })], minutes(5));
    expect(await row()).toEqual({ status: 'ok', config: next, config_at: '12:05', seen_at: '12:05' });
    // A report processed late (stamped before the stored one) changes nothing.
    await heartbeat(h, [report('postgresql', 'error', { config: PG_CONFIG })], minutes(4));
    expect(await row()).toEqual({ status: 'ok', config: next, config_at: '12:05', seen_at: '12:05' });
    // An empty config is a config: it replaces.
    await heartbeat(h, [report('postgresql', 'ok', { config: {} })], minutes(6));
    expect((await row())?.config).toEqual({});
  });

  it('heartbeats published by an agent reach the store through the heartbeat consumer, config kept', async () => {
    const h = await enrolledHost(sys);
    // Stamped before the heartbeat consumer's clock (the system's), so the heartbeat is the newer report.
    await store(
      sys,
      h,
      snapshotWith(minutes(0), 'hb', [report('postgresql', 'ok', { config: PG_CONFIG })]),
      new Date(sys.clock.now() - 60_000),
    );
    const heartbeatBody = {
      sent_at: new Date().toISOString(),
      agent_version: '1.0.0',
      integrations: [report('postgresql', 'error', { status_message: 'down' })],
    };
    await jetstream(sys.nc).publish(`svc.agent.${h.agent_id}.heartbeat`, JSON.stringify(heartbeatBody));
    const deadline = Date.now() + 15_000;
    let row: { status: string; status_message: string; config: unknown } | undefined;
    do {
      [row] = await sys.sql<{ status: string; status_message: string; config: unknown }>(
        `SELECT status, status_message, config FROM host_integrations WHERE host_id = ?`,
        [h.host_id],
      );
      if (row?.status === 'error') break;
      await new Promise((r) => setTimeout(r, 50));
    } while (Date.now() < deadline);
    expect(row).toEqual({ status: 'error', status_message: 'down', config: PG_CONFIG });
  });

  it('heartbeats add and update but never remove; a snapshot removes what it does not list', async () => {
    const h = await enrolledHost(sys);
    const ids = async (): Promise<string[]> =>
      (
        await sys.sql<{ id: string }>(
          `SELECT integration_id AS id FROM host_integrations WHERE host_id = ? ORDER BY 1`,
          [h.host_id],
        )
      ).map((r) => r.id);
    await store(
      sys,
      h,
      snapshotWith(minutes(0), 'rm', [report('postgresql', 'ok'), report('redis', 'ok')]),
      minutes(0),
    );
    await heartbeat(h, [report('nginx', 'ok')], minutes(1));
    expect(await ids()).toEqual(['nginx', 'postgresql', 'redis']);
    await heartbeat(h, [], minutes(2));
    expect(await ids()).toEqual(['nginx', 'postgresql', 'redis']);
    await store(sys, h, snapshotWith(minutes(3), 'rm', [report('redis', 'ok')]), minutes(3));
    expect(await ids()).toEqual(['redis']);
    await store(sys, h, snapshotWith(minutes(4), 'rm', []), minutes(4));
    expect(await ids()).toEqual([]);
    // A type the catalogue does not know is added (name = id, category other), once, even when repeated.
    const custom = `custom-${sys.tag}`;
    await heartbeat(h, [report(custom, 'unknown'), report(custom, 'ok')], minutes(5));
    expect(await sys.sql(`SELECT id, name, category, origin FROM integrations WHERE id = ?`, [custom])).toEqual([
      { id: custom, name: custom, category: 'other', origin: 'agent' },
    ]);
    expect(
      await sys.sql(`SELECT status FROM host_integrations WHERE host_id = ? AND integration_id = ?`, [
        h.host_id,
        custom,
      ]),
    ).toEqual([{ status: 'unknown' }]);
  });

  it('GET /integrations: every catalogue type, counts and status summary over the caller’s hosts only', async () => {
    const res = await api(sys, { token: engineerA })('GET', '/api/v1/integrations');
    expectStatus(res, 200);
    const types = res.json().data as Type[];
    const byId = new Map(types.map((t) => [t.id, t]));
    for (const id of ['postgresql', 'mysql', 'redis', 'nats', 'nginx', 'docker', 'clickhouse', 'victoriametrics'])
      expect(byId.has(id)).toBe(true);
    expect(keys(types[0]!)).toEqual(['category', 'description', 'host_count', 'id', 'name', 'status_summary']);
    expect(byId.get('postgresql')).toEqual({
      id: 'postgresql',
      name: 'PostgreSQL',
      category: 'database',
      description: expect.any(String),
      host_count: 2,
      status_summary: { ok: 1, warning: 0, error: 1, unknown: 0 },
    });
    expect(byId.get('redis')).toMatchObject({
      host_count: 1,
      status_summary: { ok: 1, warning: 0, error: 0, unknown: 0 },
    });
    expect(byId.get('mysql')).toMatchObject({
      host_count: 0,
      status_summary: { ok: 0, warning: 0, error: 0, unknown: 0 },
    });
    // Its own agent-reported type is listed; the other client's is not even named.
    expect(byId.get(privateA)).toEqual({
      id: privateA,
      name: privateA,
      category: 'other',
      description: '',
      host_count: 1,
      status_summary: { ok: 0, warning: 1, error: 0, unknown: 0 },
    });
    expect(byId.has(privateB)).toBe(false);

    const b = (await api(sys, { token: engineerB })('GET', '/api/v1/integrations')).json().data as Type[];
    expect(b.find((t) => t.id === 'postgresql')).toMatchObject({
      host_count: 1,
      status_summary: { ok: 0, warning: 1, error: 0, unknown: 0 },
    });
    expect(b.some((t) => t.id === privateA)).toBe(false);
    expect(b.find((t) => t.id === privateB)?.host_count).toBe(1);

    // The super admin sees every host (this database holds other runs' hosts too: at least ours).
    const all = (await api(sys, { token: root })('GET', '/api/v1/integrations')).json().data as Type[];
    expect(all.find((t) => t.id === 'postgresql')!.host_count).toBeGreaterThanOrEqual(3);
    expect(all.some((t) => t.id === privateA) && all.some((t) => t.id === privateB)).toBe(true);

    // Viewer holds hosts:read but not integrations:read.
    expectStatus(await api(sys, { token: viewerA })('GET', '/api/v1/integrations'), 403);
    expectStatus(await sys.http({ method: 'GET', url: '/api/v1/integrations' }), 401);
  });

  it('GET /integrations/:id: one type counted the same way; 404 for unknown and other tenants’ private types', async () => {
    const call = api(sys, { token: engineerA });
    const pg = await call('GET', '/api/v1/integrations/postgresql');
    expectStatus(pg, 200);
    expect(pg.json().data).toMatchObject({
      id: 'postgresql',
      host_count: 2,
      status_summary: { ok: 1, warning: 0, error: 1, unknown: 0 },
    });
    expect((await call('GET', `/api/v1/integrations/${privateA}`)).json().data).toMatchObject({
      id: privateA,
      host_count: 1,
    });
    expectStatus(await call('GET', `/api/v1/integrations/${privateB}`), 404);
    expectStatus(await call('GET', '/api/v1/integrations/no-such-integration'), 404);
    expectStatus(await call('GET', '/api/v1/integrations/Bad.Id'), 400);
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/integrations/${privateB}`), 200);
    expectStatus(await api(sys, { token: viewerA })('GET', '/api/v1/integrations/postgresql'), 403);
  });

  it('GET /integrations/:id/hosts: host-integration records within the caller’s reach', async () => {
    const res = await api(sys, { token: engineerA })('GET', '/api/v1/integrations/postgresql/hosts');
    expectStatus(res, 200);
    const rows = res.json().data as Record_[];
    expect(rows.map((r) => r.hostname)).toEqual(['alpha-1', 'alpha-2']);
    expect(keys(rows[0]!)).toEqual([
      'collector_name',
      'config',
      'enabled',
      'host_id',
      'hostname',
      'id',
      'integration_id',
      'last_seen_at',
      'status',
      'status_message',
    ]);
    expect(rows[0]).toEqual({
      id: expect.any(String),
      host_id: a1.host_id,
      integration_id: 'postgresql',
      collector_name: 'postgresql-collector',
      status: 'ok',
      status_message: '',
      enabled: true,
      config: PG_CONFIG,
      hostname: 'alpha-1',
      last_seen_at: '2026-11-22T12:00:00.000Z',
    });
    expect(rows[1]).toMatchObject({
      host_id: a2.host_id,
      status: 'error',
      status_message: 'connection refused',
      config: {},
    });

    const b = (await api(sys, { token: engineerB })('GET', '/api/v1/integrations/postgresql/hosts')).json()
      .data as Record_[];
    expect(b.map((r) => r.host_id)).toEqual([b1.host_id]);
    expect(
      (await api(sys, { token: engineerA })('GET', `/api/v1/integrations/${privateA}/hosts`)).json().data,
    ).toHaveLength(1);
    expectStatus(await api(sys, { token: engineerA })('GET', `/api/v1/integrations/${privateB}/hosts`), 404);
    expect((await api(sys, { token: engineerA })('GET', '/api/v1/integrations/mysql/hosts')).json()).toEqual({
      data: [],
    });
    expectStatus(await api(sys, { token: viewerA })('GET', '/api/v1/integrations/postgresql/hosts'), 403);
  });

  it('GET /hosts/:id/integrations and /clients/:id/integrations: 404 out of reach, 403 without integrations:read', async () => {
    const call = api(sys, { token: engineerA });
    const host = await call('GET', `/api/v1/hosts/${a1.host_id}/integrations`);
    expectStatus(host, 200);
    expect((host.json().data as Record_[]).map((r) => [r.integration_id, r.status, r.hostname])).toEqual([
      ['postgresql', 'ok', 'alpha-1'],
      ['redis', 'ok', 'alpha-1'],
    ]);
    expect((host.json().data as Record_[])[0]!.config).toEqual(PG_CONFIG);

    const client = await call('GET', `/api/v1/clients/${clientA}/integrations`);
    expectStatus(client, 200);
    expect((client.json().data as Record_[]).map((r) => `${r.hostname}/${r.integration_id}`)).toEqual([
      'alpha-1/postgresql',
      'alpha-1/redis',
      `alpha-2/${privateA}`,
      'alpha-2/postgresql',
    ]);

    // Client A's user cannot see B's host or client, and the answer is the one for a missing resource.
    expectStatus(await call('GET', `/api/v1/hosts/${b1.host_id}/integrations`), 404);
    expectStatus(await call('GET', `/api/v1/clients/${clientB}/integrations`), 404);
    expectStatus(await call('GET', `/api/v1/hosts/${crypto.randomUUID()}/integrations`), 404);
    expectStatus(await call('GET', '/api/v1/hosts/nope/integrations'), 400);
    // In reach, without the permission.
    expectStatus(await api(sys, { token: viewerA })('GET', `/api/v1/hosts/${a1.host_id}/integrations`), 403);
    expectStatus(await api(sys, { token: viewerA })('GET', `/api/v1/clients/${clientA}/integrations`), 403);
    // The super admin: any client, 404 for one that does not exist.
    const b = (await api(sys, { token: root })('GET', `/api/v1/clients/${clientB}/integrations`)).json()
      .data as Record_[];
    expect(b.map((r) => `${r.hostname}/${r.integration_id}`)).toEqual([`beta-1/${privateB}`, 'beta-1/postgresql']);
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/clients/${crypto.randomUUID()}/integrations`), 404);
    expect(
      (await api(sys, { token: engineerB })('GET', `/api/v1/hosts/${b1.host_id}/integrations`)).json().data,
    ).toHaveLength(2);
  });
});

const keys = (o: object): string[] => Object.keys(o).sort();
