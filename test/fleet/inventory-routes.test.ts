import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, expectStatus, startAdminSystem, userWith } from '../identity/admin-support.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { enrolledHost, realisticSnapshot, store, type TestHost } from './inventory-support.ts';

let sys: TestSystem;
let root: string;
let hostA: TestHost;
let emptyA: TestHost;
let hostB: TestHost;
/** Engineer on client A (hosts:read), on client B, and a user on A whose role lacks hosts:read. */
let engineerA: string;
let engineerB: string;
let noHostsA: string;

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const ROUTES = [
  'services',
  'packages',
  'ports',
  'interfaces',
  'users',
  'processes',
  'cron-jobs',
  'gpu-devices',
  'security',
] as const;
const keys = (o: object): string[] => Object.keys(o).sort();

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  const a = await createClient(sys);
  const b = await createClient(sys);
  hostA = await enrolledHost(sys, a.id, 'web-a');
  emptyA = await enrolledHost(sys, a.id, 'empty-a');
  hostB = await enrolledHost(sys, b.id, 'web-b');
  const collectedAt = new Date(Date.UTC(2026, 10, 22, 12, 0, 0));
  await store(sys, hostA, realisticSnapshot({ collectedAt, hostname: 'web-a', packages: 120 }));
  await store(sys, hostB, realisticSnapshot({ collectedAt, hostname: 'web-b', packages: 7, processes: 3 }));
  engineerA = (await userWith(sys, 'Engineer', a.id)).token;
  engineerB = (await userWith(sys, 'Engineer', b.id)).token;
  // A role with client access but without hosts:read: in reach, not permitted.
  const roleId = randomUUID();
  await sys.sql(
    `INSERT INTO roles (id, name, description, permissions, is_system) VALUES (?, ?, '', '{clients:read}', false)`,
    [roleId, `No hosts ${sys.tag}`],
  );
  const u = await createUser(sys);
  await assignRole(sys, u.id, a.id, roleId);
  noHostsA = await tokenFor(sys, u);
});
afterAll(() => sys?.stop());

describe('host inventory routes', () => {
  it('services, packages, ports, interfaces and users: arrays of records in a stable order', async () => {
    const call = api(sys, { token: engineerA });
    const services = await call('GET', `/api/v1/hosts/${hostA.host_id}/services`);
    expectStatus(services, 200);
    const svc = services.json().data as { name: string; enabled: boolean | null; main_pid: number | null }[];
    expect(svc).toHaveLength(150);
    expect(svc.map((s) => s.name)).toEqual([...svc.map((s) => s.name)].sort());
    expect(keys(svc[0]!)).toEqual([
      'active_state',
      'description',
      'enabled',
      'host_id',
      'load_state',
      'main_pid',
      'manager',
      'name',
      'sub_state',
    ]);
    expect(svc[0]).toEqual({
      host_id: hostA.host_id,
      name: 'svc-000.service',
      description: 'Service 0',
      load_state: 'loaded',
      active_state: 'inactive',
      sub_state: 'dead',
      enabled: false,
      main_pid: null,
      manager: 'systemd',
    });

    const packages = (await call('GET', `/api/v1/hosts/${hostA.host_id}/packages`)).json().data as {
      name: string;
      installed_size_bytes: number;
    }[];
    expect(packages).toHaveLength(120);
    expect(packages.map((p) => p.name)).toEqual([...packages.map((p) => p.name)].sort());
    expect(keys(packages[0]!)).toEqual([
      'architecture',
      'description',
      'host_id',
      'installed_size_bytes',
      'manager',
      'name',
      'version',
    ]);
    expect(packages[1]).toMatchObject({
      name: 'pkg-0001',
      version: '1.0.1',
      architecture: 'amd64',
      manager: 'dpkg',
      installed_size_bytes: 20_480,
    });

    const ports = (await call('GET', `/api/v1/hosts/${hostA.host_id}/ports`)).json().data as {
      local_port: number;
      protocol: string;
    }[];
    expect(ports).toHaveLength(40);
    expect(ports.map((p) => p.local_port)).toEqual([...ports.map((p) => p.local_port)].sort((x, y) => x - y));
    expect(keys(ports[0]!)).toEqual([
      'host_id',
      'local_address',
      'local_port',
      'pid',
      'process_name',
      'protocol',
      'remote_address',
      'remote_port',
      'state',
    ]);
    expect(ports[0]).toMatchObject({
      local_port: 22,
      protocol: 'udp',
      local_address: '0.0.0.0',
      remote_address: '',
      remote_port: 0,
      pid: 100,
    });

    const interfaces = (await call('GET', `/api/v1/hosts/${hostA.host_id}/interfaces`)).json().data as {
      name: string;
    }[];
    expect(interfaces.map((i) => i.name)).toEqual(['docker0', 'eth0', 'lo']);
    expect(interfaces[1]).toEqual({
      host_id: hostA.host_id,
      name: 'eth0',
      mac_address: '52:54:00:12:34:56',
      ipv4_addresses: ['10.0.0.10'],
      ipv6_addresses: ['fe80::1'],
      mtu: 1500,
      state: 'up',
      speed_mbps: 10_000,
      rx_bytes: 9_007_199_254_740,
      tx_bytes: 123_456_789,
    });
    expect(interfaces[0]).toMatchObject({ ipv6_addresses: [], speed_mbps: null, rx_bytes: 0 });

    const users = (await call('GET', `/api/v1/hosts/${hostA.host_id}/users`)).json().data as { username: string }[];
    expect(users).toHaveLength(35);
    expect(users.map((u) => u.username)).toEqual([...users.map((u) => u.username)].sort());
    expect(users[0]).toEqual({
      host_id: hostA.host_id,
      username: 'root',
      uid: 0,
      gid: 0,
      home: '/root',
      shell: '/usr/sbin/nologin',
      gecos: '',
      is_system: true,
      groups: ['root'],
    });
  });

  it('processes: pages of the spec’s fields, highest CPU first then pid, 50 per page by default', async () => {
    const call = api(sys, { token: engineerA });
    const first = await call('GET', `/api/v1/hosts/${hostA.host_id}/processes`);
    expectStatus(first, 200);
    expect(first.json().meta).toEqual({ total: 300, page: 1, per_page: 50 });
    const rows = first.json().data as {
      pid: number;
      cpu_percent: number;
      started_at: string;
      memory_vms_bytes: number;
    }[];
    expect(rows).toHaveLength(50);
    expect(keys(rows[0]!)).toEqual(
      [
        'command',
        'cpu_percent',
        'memory_percent',
        'memory_rss_bytes',
        'memory_vms_bytes',
        'name',
        'pid',
        'ppid',
        'started_at',
        'state',
        'threads',
        'username',
      ].sort(),
    );
    expect(rows[0]!.started_at).toMatch(ISO);
    expect(typeof rows[0]!.memory_vms_bytes).toBe('number');

    const all: { pid: number; cpu_percent: number }[] = [];
    for (let page = 1; page <= 3; page++) {
      const res = await call('GET', `/api/v1/hosts/${hostA.host_id}/processes?page=${page}&per_page=100`);
      expect(res.json().meta).toEqual({ total: 300, page, per_page: 100 });
      all.push(...res.json().data);
    }
    const sorted = [...all].sort((x, y) => y.cpu_percent - x.cpu_percent || x.pid - y.pid);
    expect(all.map((p) => p.pid)).toEqual(sorted.map((p) => p.pid));
    expect(new Set(all.map((p) => p.pid)).size).toBe(300);
    // Equal CPU figures exist (i*37 mod 200 repeats), and the pid breaks the tie.
    expect(all.some((p, i) => i > 0 && all[i - 1]!.cpu_percent === p.cpu_percent)).toBe(true);
    const beyond = await call('GET', `/api/v1/hosts/${hostA.host_id}/processes?page=7`);
    expect(beyond.json()).toEqual({ data: [], meta: { total: 300, page: 7, per_page: 50 } });

    expectStatus(await call('GET', `/api/v1/hosts/${hostA.host_id}/processes?per_page=101`), 400);
    expectStatus(await call('GET', `/api/v1/hosts/${hostA.host_id}/processes?page=0`), 400);
    expectStatus(await call('GET', `/api/v1/hosts/${hostA.host_id}/processes?per_page=abc`), 400);
  });

  it('cron jobs: pages in the order the agent found them; GPU devices; empty lists for a host without inventory', async () => {
    const call = api(sys, { token: engineerA });
    const cron = await call('GET', `/api/v1/hosts/${hostA.host_id}/cron-jobs?per_page=4&page=2`);
    expectStatus(cron, 200);
    expect(cron.json().meta).toEqual({ total: 10, page: 2, per_page: 4 });
    const jobs = cron.json().data as { command: string }[];
    expect(jobs.map((j) => j.command)).toEqual([
      '/usr/local/bin/job-4.sh',
      '/usr/local/bin/job-5.sh',
      '/usr/local/bin/job-6.sh',
      '/usr/local/bin/job-7.sh',
    ]);
    expect(keys(jobs[0]!)).toEqual(['command', 'host_id', 'id', 'is_active', 'schedule', 'source', 'username']);
    expect(jobs[0]).toMatchObject({
      host_id: hostA.host_id,
      username: 'root',
      schedule: '4 * * * *',
      source: '/etc/cron.d/job4',
      is_active: true,
    });
    expect((await call('GET', `/api/v1/hosts/${hostA.host_id}/cron-jobs`)).json().meta).toEqual({
      total: 10,
      page: 1,
      per_page: 20,
    });

    const gpus = await call('GET', `/api/v1/hosts/${hostA.host_id}/gpu-devices`);
    expectStatus(gpus, 200);
    expect(gpus.json().data).toEqual([
      {
        id: expect.any(String),
        host_id: hostA.host_id,
        device_index: 0,
        name: 'NVIDIA A10',
        vendor: 'NVIDIA',
        driver_version: '535.104',
        memory_total_bytes: 24_146_608_128,
        pci_bus_id: '0000:65:00.0',
        architecture: 'Ampere',
      },
    ]);

    for (const r of ['services', 'packages', 'ports', 'interfaces', 'users', 'gpu-devices']) {
      const res = await call('GET', `/api/v1/hosts/${emptyA.host_id}/${r}`);
      expectStatus(res, 200);
      expect(res.json()).toEqual({ data: [] });
    }
    expect((await call('GET', `/api/v1/hosts/${emptyA.host_id}/processes`)).json()).toEqual({
      data: [],
      meta: { total: 0, page: 1, per_page: 50 },
    });
    expect((await call('GET', `/api/v1/hosts/${emptyA.host_id}/security`)).json()).toEqual({
      data: { firewall_rules: [], certificates: [], kernel_modules: [], security_items: [] },
    });
  });

  it('security: firewall rules, certificates, kernel modules and security items together', async () => {
    const res = await api(sys, { token: engineerA })('GET', `/api/v1/hosts/${hostA.host_id}/security`);
    expectStatus(res, 200);
    const data = res.json().data as {
      firewall_rules: { rule_number: number }[];
      certificates: { not_after: string; not_before: string }[];
      kernel_modules: { name: string; used_by: string[]; size_bytes: number }[];
      security_items: { category: string; key: string }[];
    };
    expect(keys(data)).toEqual(['certificates', 'firewall_rules', 'kernel_modules', 'security_items']);
    expect(data.firewall_rules.map((r) => r.rule_number)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(keys(data.firewall_rules[0]!)).toEqual([
      'chain',
      'host_id',
      'id',
      'port',
      'protocol',
      'rule_number',
      'rule_text',
      'table_name',
      'target',
      'tool',
    ]);
    expect(data.certificates).toHaveLength(10);
    expect(keys(data.certificates[0]!)).toEqual([
      'fingerprint_sha256',
      'host_id',
      'id',
      'is_ca',
      'issuer',
      'key_algorithm',
      'key_bits',
      'not_after',
      'not_before',
      'subject',
    ]);
    expect(data.certificates[0]).toMatchObject({
      subject: 'CN=site0.example.com',
      not_before: '2026-01-01T00:00:00.000Z',
      not_after: '2027-01-01T00:00:00.000Z',
      is_ca: true,
      key_bits: 2048,
    });
    expect(data.certificates.map((c) => c.not_after)).toEqual([...data.certificates.map((c) => c.not_after)].sort());
    expect(data.kernel_modules).toHaveLength(80);
    expect(data.kernel_modules[0]).toEqual({
      id: expect.any(String),
      host_id: hostA.host_id,
      name: 'mod_00',
      size_bytes: 16_384,
      instances: 0,
      used_by: ['mod_00'],
    });
    expect(data.security_items.map((s) => `${s.category}/${s.key}`)).toEqual([
      'apparmor/status',
      'kernel/kernel.randomize_va_space',
      'sshd/PasswordAuthentication',
      'sshd/PermitRootLogin',
      'updates/pending_security',
    ]);
  });

  it('answers 404 out of reach (another client, unknown host), 403 in reach without hosts:read, 400 for a malformed id', async () => {
    const other = api(sys, { token: engineerB });
    const forbidden = api(sys, { token: noHostsA });
    const admin = api(sys, { token: root });
    for (const r of ROUTES) {
      // A user of client B never sees client A's inventory, and the answer does not tell the host exists.
      const hidden = await other('GET', `/api/v1/hosts/${hostA.host_id}/${r}`);
      expectStatus(hidden, 404);
      expect(hidden.json().error.code).toBe('not_found');
      expectStatus(await other('GET', `/api/v1/hosts/${randomUUID()}/${r}`), 404);
      expectStatus(await forbidden('GET', `/api/v1/hosts/${hostA.host_id}/${r}`), 403);
      expectStatus(await other('GET', `/api/v1/hosts/not-a-uuid/${r}`), 400);
      expectStatus(await sys.http({ method: 'GET', url: `/api/v1/hosts/${hostA.host_id}/${r}` }), 401);
      expectStatus(await admin('GET', `/api/v1/hosts/${hostA.host_id}/${r}`), 200);
      expectStatus(await other('GET', `/api/v1/hosts/${hostB.host_id}/${r}`), 200);
    }
    // B's own inventory is B's: its 7 packages, not A's 120.
    expect(((await other('GET', `/api/v1/hosts/${hostB.host_id}/packages`)).json().data as unknown[]).length).toBe(7);
    expect((await other('GET', `/api/v1/hosts/${hostB.host_id}/processes`)).json().meta.total).toBe(3);
  });
});
