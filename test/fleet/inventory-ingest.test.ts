import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INVENTORY_DURABLE } from '../../actors/fleet/inventory/ingest.ts';
import { wireDurableName } from '../../platform/namespace.ts';
import { DlqHeaders, dlqSubjectFor } from '../../contracts/streams.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import {
  count,
  counts,
  enrolledHost,
  publishInventory,
  realisticSnapshot,
  store,
  waitForIngest,
  type TestHost,
} from './inventory-support.ts';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem({ SVC_ACTORS: 'identity,fleet', SVC_GATEWAYS: 'none' });
});
afterAll(() => sys?.stop());

const MINUTE = 60_000;
const T0 = new Date(Date.UTC(2026, 10, 22, 12, 0, 0));
const at = (minutes: number): Date => new Date(T0.getTime() + minutes * MINUTE);

interface HostFactsRow {
  hostname: string;
  ip_address: string;
  os: string;
  agent_version: string;
  cpu_cores: number;
  memory_total_bytes: string;
  labels: Record<string, string>;
  inventory_collected_at: string | null;
}
const factsOf = async (h: TestHost): Promise<HostFactsRow> =>
  (
    await sys.sql<HostFactsRow>(
      `SELECT hostname, ip_address, os, agent_version, cpu_cores, memory_total_bytes::text AS memory_total_bytes, labels,
              to_char(inventory_collected_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS inventory_collected_at
         FROM hosts WHERE id = ?`,
      [h.host_id],
    )
  )[0]!;

async function lastDeadLetter(): Promise<{ subject: string; reason: string; error: string; body: string } | null> {
  const jsm = await jetstreamManager(sys.nc);
  const m = await jsm.streams.getMessage('SVC_DLQ', {
    last_by_subj: dlqSubjectFor(wireDurableName(INVENTORY_DURABLE)),
  });
  if (!m) return null;
  return {
    subject: m.header.get(DlqHeaders.subject),
    reason: m.header.get(DlqHeaders.reason),
    error: m.header.get(DlqHeaders.error),
    body: m.string(),
  };
}

const EXPECTED_FULL = {
  host_processes: 300,
  host_services: 150,
  host_packages: 2_000,
  host_ports: 40,
  host_interfaces: 3,
  host_users: 35,
  host_cron_jobs: 10,
  host_gpu_devices: 1,
  host_firewall_rules: 20,
  host_certificates: 10,
  host_kernel_modules: 80,
  host_security_items: 5,
  host_containers: 2,
};

describe('inventory ingest (svc.agent.*.inventory)', () => {
  it('writes a realistic snapshot, then replaces every table with the next one', async () => {
    const h = await enrolledHost(sys);
    const seq = await publishInventory(
      sys,
      h.agent_id,
      realisticSnapshot({ collectedAt: at(0), hostname: 'web-01.example' }),
    );
    await waitForIngest(sys, seq);

    expect(await factsOf(h)).toEqual({
      hostname: 'web-01.example',
      ip_address: '10.0.0.10',
      os: 'debian',
      agent_version: '1.0.0',
      cpu_cores: 8,
      memory_total_bytes: '34359738368',
      labels: { role: 'web', generation: '0' },
      inventory_collected_at: '2026-11-22T12:00:00Z',
    });
    expect(await counts(sys, h.host_id)).toEqual(EXPECTED_FULL);
    const integrations = await sys.sql<{ integration_id: string; status: string }>(
      `SELECT integration_id, status FROM host_integrations WHERE host_id = ? ORDER BY 1`,
      [h.host_id],
    );
    expect(integrations).toEqual([
      { integration_id: 'postgresql', status: 'ok' },
      { integration_id: 'redis', status: 'ok' },
    ]);
    const cronIds = await sys.sql<{ id: string }>(`SELECT id FROM host_cron_jobs WHERE host_id = ? ORDER BY ord`, [
      h.host_id,
    ]);

    // Five minutes later: fewer packages and processes, a few versions moved on, the GPU gone, redis warning.
    const seq2 = await publishInventory(
      sys,
      h.agent_id,
      realisticSnapshot({
        collectedAt: at(5),
        generation: 1,
        hostname: 'web-01.example',
        packages: 1_500,
        processes: 250,
      }),
    );
    await waitForIngest(sys, seq2);
    expect(await counts(sys, h.host_id)).toEqual({
      ...EXPECTED_FULL,
      host_packages: 1_500,
      host_processes: 250,
      host_gpu_devices: 0,
    });
    const [moved] = await sys.sql<{ version: string }>(
      `SELECT version FROM host_packages WHERE host_id = ? AND name = 'pkg-0100'`,
      [h.host_id],
    );
    expect(moved?.version).toBe('2.1.100');
    expect(await sys.sql(`SELECT 1 FROM host_packages WHERE host_id = ? AND name = 'pkg-1500'`, [h.host_id])).toEqual(
      [],
    );
    const [proc] = await sys.sql<{ cpu_percent: number }>(
      `SELECT cpu_percent FROM host_processes WHERE host_id = ? AND pid = 101`,
      [h.host_id],
    );
    expect(proc?.cpu_percent).toBeCloseTo(((37 + 11) % 200) / 10);
    expect((await factsOf(h)).ip_address).toBe('10.0.0.11');
    expect((await factsOf(h)).inventory_collected_at).toBe('2026-11-22T12:05:00Z');
    const [redis] = await sys.sql<{ status: string; status_message: string }>(
      `SELECT status, status_message FROM host_integrations WHERE host_id = ? AND integration_id = 'redis'`,
      [h.host_id],
    );
    expect(redis).toEqual({ status: 'warning', status_message: 'memory above 80%' });
    // Unchanged cron lines are the same rows (nothing rewritten), so their ids hold.
    expect(
      await sys.sql<{ id: string }>(`SELECT id FROM host_cron_jobs WHERE host_id = ? ORDER BY ord`, [h.host_id]),
    ).toEqual(cronIds);
  });

  it('leaves the tables whose part of the snapshot did not change untouched', async () => {
    const h = await enrolledHost(sys);
    expect((await store(sys, h, realisticSnapshot({ collectedAt: at(0) }))).kind).toBe('stored');
    const ids = async (): Promise<unknown[]> =>
      sys.sql(
        `SELECT id FROM host_certificates WHERE host_id = ? UNION ALL SELECT id FROM host_kernel_modules WHERE host_id = ? ORDER BY 1`,
        [h.host_id, h.host_id],
      );
    const before = await ids();
    // Five minutes on, only the processes differ (their start times are relative to the collection).
    const outcome = await store(sys, h, realisticSnapshot({ collectedAt: at(5) }));
    // Lock, host row, the processes' two statements, the integrations' three: nothing for the 2,000 unchanged packages.
    expect(outcome).toMatchObject({ kind: 'stored', statements: 7 });
    expect(await ids()).toEqual(before);
    expect(await counts(sys, h.host_id)).toEqual(EXPECTED_FULL);
    const [first] = await sys.sql<{ started_at: string }>(
      `SELECT to_char(started_at AT TIME ZONE 'UTC', 'HH24:MI') AS started_at FROM host_processes WHERE host_id = ? AND pid = 100`,
      [h.host_id],
    );
    expect(first?.started_at).toBe('11:05');
  });

  it('writes nothing of a snapshot the store refuses half-way, and dead-letters it', async () => {
    const h = await enrolledHost(sys);
    await waitForIngest(
      sys,
      await publishInventory(sys, h.agent_id, realisticSnapshot({ collectedAt: at(0), hostname: 'before' })),
    );
    const before = await counts(sys, h.host_id);

    // Kernel modules are written late in the transaction: a count beyond PostgreSQL's integer fails there.
    const bad = realisticSnapshot({ collectedAt: at(5), generation: 1, hostname: 'after', packages: 10 });
    bad.kernel_modules = [{ name: 'huge', size_bytes: 1, instances: 3_000_000_000 }];
    const seq = await publishInventory(sys, h.agent_id, bad);
    await waitForIngest(sys, seq);

    expect(await counts(sys, h.host_id)).toEqual(before);
    const facts = await factsOf(h);
    expect(facts.hostname).toBe('before');
    expect(facts.inventory_collected_at).toBe('2026-11-22T12:00:00Z');
    const dl = await lastDeadLetter();
    expect(dl?.subject).toBe(`svc.agent.${h.agent_id}.inventory`);
    expect(dl?.reason).toBe('rejected');
    expect(dl?.error).toContain('refused');
  });

  it('skips a snapshot older than or as old as the stored one (out of order, redelivered)', async () => {
    const h = await enrolledHost(sys);
    const current = realisticSnapshot({ collectedAt: at(10), hostname: 'current', packages: 200 });
    await waitForIngest(sys, await publishInventory(sys, h.agent_id, current));
    const cron = await sys.sql(`SELECT id, ord, command FROM host_cron_jobs WHERE host_id = ? ORDER BY ord`, [
      h.host_id,
    ]);

    // Late: collected before the stored one, with other content.
    const older = realisticSnapshot({ collectedAt: at(5), generation: 3, hostname: 'older', packages: 50 });
    // Redelivered: the very same snapshot twice more.
    await publishInventory(sys, h.agent_id, older);
    await publishInventory(sys, h.agent_id, current);
    await waitForIngest(sys, await publishInventory(sys, h.agent_id, current));

    expect((await factsOf(h)).hostname).toBe('current');
    expect((await factsOf(h)).inventory_collected_at).toBe('2026-11-22T12:10:00Z');
    expect(await count(sys, 'host_packages', h.host_id)).toBe(200);
    expect(
      await sys.sql(`SELECT id, ord, command FROM host_cron_jobs WHERE host_id = ? ORDER BY ord`, [h.host_id]),
    ).toEqual(cron);
    // The store says so directly too.
    expect(await store(sys, h, current)).toEqual({ kind: 'stale' });
    expect(await store(sys, h, older)).toEqual({ kind: 'stale' });
  });

  it('keeps the first of records that repeat a key instead of failing the snapshot', async () => {
    const h = await enrolledHost(sys);
    const snap = realisticSnapshot({ collectedAt: at(0), packages: 3, processes: 2 });
    snap.packages!.push({ ...snap.packages![0]!, version: '9.9.9' });
    // Same name in another architecture is another package.
    snap.packages!.push({ ...snap.packages![0]!, architecture: 'i386', version: '1.0.0-i386' });
    snap.services!.push({ ...snap.services![1]!, description: 'second copy' });
    snap.users!.push({ ...snap.users![0]!, uid: 4242 });
    snap.processes!.push({ ...snap.processes![0]!, name: 'reused-pid' });
    snap.interfaces!.push({ ...snap.interfaces![0]!, mtu: 1 });
    snap.containers!.push({ ...snap.containers![0]!, name: 'again' });
    snap.integrations!.push({ integration_id: 'postgresql', collector_name: 'other', status: 'error' });
    await waitForIngest(sys, await publishInventory(sys, h.agent_id, snap));

    expect(
      await sys.sql(
        `SELECT name, architecture, version FROM host_packages WHERE host_id = ? ORDER BY name, architecture`,
        [h.host_id],
      ),
    ).toEqual([
      { name: 'pkg-0000', architecture: 'all', version: '2.0.0' },
      { name: 'pkg-0000', architecture: 'i386', version: '1.0.0-i386' },
      { name: 'pkg-0001', architecture: 'amd64', version: '1.0.1' },
      { name: 'pkg-0002', architecture: 'amd64', version: '1.0.2' },
    ]);
    expect(
      await sys.sql(`SELECT description FROM host_services WHERE host_id = ? AND name = 'svc-001.service'`, [
        h.host_id,
      ]),
    ).toEqual([{ description: 'Service 1' }]);
    expect(
      await sys.sql(`SELECT uid::int AS uid FROM host_users WHERE host_id = ? AND username = 'root'`, [h.host_id]),
    ).toEqual([{ uid: 0 }]);
    expect(await sys.sql(`SELECT name FROM host_processes WHERE host_id = ? ORDER BY pid`, [h.host_id])).toEqual([
      { name: 'systemd' },
      { name: 'worker-1' },
    ]);
    expect(await sys.sql(`SELECT mtu FROM host_interfaces WHERE host_id = ? AND name = 'lo'`, [h.host_id])).toEqual([
      { mtu: 65536 },
    ]);
    expect(
      await sys.sql(`SELECT name FROM host_containers WHERE host_id = ? AND container_id = 'a1b2c3'`, [h.host_id]),
    ).toEqual([{ name: 'redis' }]);
    expect(
      await sys.sql(
        `SELECT collector_name, status FROM host_integrations WHERE host_id = ? AND integration_id = 'postgresql'`,
        [h.host_id],
      ),
    ).toEqual([{ collector_name: 'postgres-collector', status: 'ok' }]);
    const outcome = await store(sys, h, { ...snap, collected_at: at(1).toISOString() });
    expect(outcome.kind === 'stored' && outcome.duplicates).toEqual({
      packages: 1,
      services: 1,
      users: 1,
      processes: 1,
      interfaces: 1,
      containers: 1,
      integrations: 1,
    });
  });

  it('dead-letters a malformed payload and goes on with the next good snapshot', async () => {
    const h = await enrolledHost(sys);
    await publishInventory(sys, h.agent_id, 'not json {');
    await waitForIngest(
      sys,
      await publishInventory(sys, h.agent_id, {
        collected_at: 'yesterday',
        agent_version: '1',
        facts: { hostname: 'x' },
      }),
    );
    const dl = await lastDeadLetter();
    expect(dl?.subject).toBe(`svc.agent.${h.agent_id}.inventory`);
    expect(dl?.reason).toBe('malformed');
    expect(dl?.error).toContain('collected_at');
    expect(dl?.body).toContain('yesterday');
    expect((await factsOf(h)).inventory_collected_at).toBeNull();

    await waitForIngest(
      sys,
      await publishInventory(sys, h.agent_id, realisticSnapshot({ collectedAt: at(0), hostname: 'good', packages: 5 })),
    );
    expect((await factsOf(h)).hostname).toBe('good');
    expect(await count(sys, 'host_packages', h.host_id)).toBe(5);
  });

  it('dead-letters a snapshot from an agent that is not enrolled (or revoked)', async () => {
    const h = await enrolledHost(sys);
    await sys.sql(`UPDATE agents SET status = 'revoked', revoked_at = now() WHERE id = ?`, [h.agent_id]);
    await waitForIngest(
      sys,
      await publishInventory(sys, h.agent_id, realisticSnapshot({ collectedAt: at(0), packages: 5 })),
    );
    const dl = await lastDeadLetter();
    expect(dl?.subject).toBe(`svc.agent.${h.agent_id}.inventory`);
    expect(dl?.reason).toBe('rejected');
    expect(await count(sys, 'host_packages', h.host_id)).toBe(0);
  });

  it('lets the newer of two concurrent snapshots of one host win whole', async () => {
    const h = await enrolledHost(sys);
    const a = realisticSnapshot({ collectedAt: at(20), hostname: 'first', packages: 700, processes: 70 });
    const b = realisticSnapshot({
      collectedAt: at(21),
      generation: 2,
      hostname: 'second',
      packages: 300,
      processes: 30,
    });
    // Both orders: the older one either runs first and is replaced, or waits on the lock and is then stale.
    const outcomes = await Promise.all([store(sys, h, b), store(sys, h, a)]);
    expect(outcomes[0]!.kind).toBe('stored');
    expect(['stored', 'stale']).toContain(outcomes[1]!.kind);
    expect((await factsOf(h)).hostname).toBe('second');
    expect(await count(sys, 'host_packages', h.host_id)).toBe(300);
    expect(await count(sys, 'host_processes', h.host_id)).toBe(30);
  });

  it('drops NUL characters PostgreSQL cannot store instead of refusing the snapshot', async () => {
    const h = await enrolledHost(sys);
    const snap = realisticSnapshot({ collectedAt: at(0), packages: 1, processes: 1, hostname: 'nul\u0000host' });
    snap.processes![0]!.command = '/usr/bin/app\u0000--flag\u0000value';
    snap.labels = { 'k\u0000ey': 'v\u0000al' };
    expect((await store(sys, h, snap)).kind).toBe('stored');
    expect((await factsOf(h)).hostname).toBe('nulhost');
    expect((await factsOf(h)).labels).toEqual({ key: 'val' });
    expect(await sys.sql(`SELECT command FROM host_processes WHERE host_id = ?`, [h.host_id])).toEqual([
      { command: '/usr/bin/app--flagvalue' },
    ]);
  });
});
