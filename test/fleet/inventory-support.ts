import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { INVENTORY_DURABLE } from '../../actors/fleet/inventory/ingest.ts';
import { storeSnapshot, type SnapshotOutcome } from '../../actors/fleet/inventory/snapshot-store.ts';
import { wireDurableName } from '../../platform/namespace.ts';
import { InventorySnapshot, type InventorySnapshotIn } from '../../contracts/domains/agent-telemetry.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';

/** Shared set-up of the inventory and integration tests: enrolled hosts in the database, realistic snapshots. */

export interface TestHost {
  client_id: string;
  environment_id: string;
  agent_id: string;
  host_id: string;
  hostname: string;
}

/** An active agent enrolled on a new host (of `clientId`, or of a new client), written straight into the tables. */
export async function enrolledHost(
  sys: TestSystem,
  clientId?: string,
  hostname = `host-${randomUUID().slice(0, 8)}`,
): Promise<TestHost> {
  const client_id = clientId ?? (await createClient(sys)).id;
  const environment_id = randomUUID();
  const agent_id = randomUUID();
  const host_id = randomUUID();
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, 'Production', ?)`, [
    environment_id,
    client_id,
    `prod-${environment_id.slice(0, 8)}`,
  ]);
  await sys.sql(`INSERT INTO hosts (id, environment_id, client_id, agent_id, hostname) VALUES (?, ?, ?, ?, ?)`, [
    host_id,
    environment_id,
    client_id,
    agent_id,
    hostname,
  ]);
  await sys.sql(
    `INSERT INTO agents (id, client_id, environment_id, host_id, public_key, status, hostname, enrolled_at) VALUES (?, ?, ?, ?, ?, 'active', ?, now())`,
    [agent_id, client_id, environment_id, host_id, `U${agent_id.replaceAll('-', '').toUpperCase()}`, hostname],
  );
  return { client_id, environment_id, agent_id, host_id, hostname };
}

export interface SnapshotShape {
  collectedAt: Date;
  /** Changes versions, CPU figures and a few names, so two generations differ the way a real machine does. */
  generation?: number;
  hostname?: string;
  packages?: number;
  processes?: number;
}

const hex = (n: number, width: number): string => n.toString(16).toUpperCase().padStart(width, '0');
const fingerprint = (n: number): string =>
  Array.from({ length: 32 }, (_, i) => hex((n * 7 + i * 13) % 256, 2)).join(':');

/** A snapshot of the size of a real server: ~2,000 packages, ~300 processes, services, ports, users, certificates... */
export function realisticSnapshot(shape: SnapshotShape): InventorySnapshotIn {
  const g = shape.generation ?? 0;
  const packages = shape.packages ?? 2_000;
  const processes = shape.processes ?? 300;
  const at = shape.collectedAt.toISOString();
  return {
    collected_at: at,
    agent_version: `1.${g}.0`,
    facts: {
      hostname: shape.hostname ?? 'web-01',
      ip_address: `10.0.0.${10 + g}`,
      os: 'debian',
      os_version: '12',
      kernel_version: '6.1.0-28-amd64',
      arch: 'x86_64',
      cpu_cores: 8,
      memory_total_bytes: 34_359_738_368,
    },
    labels: { role: 'web', generation: String(g) },
    processes: Array.from({ length: processes }, (_, i) => ({
      pid: 100 + i,
      name: i === 0 ? 'systemd' : `worker-${i % 40}`,
      command: `/usr/bin/worker-${i % 40} --id ${i}`,
      username: i % 3 === 0 ? 'root' : 'www-data',
      state: 'S',
      ppid: i === 0 ? 0 : 100,
      threads: 1 + (i % 8),
      cpu_percent: ((i * 37 + g * 11) % 200) / 10,
      memory_percent: (i % 50) / 10,
      memory_rss_bytes: 1_048_576 * (1 + (i % 200)),
      memory_vms_bytes: 4_294_967_296 + i,
      started_at: new Date(shape.collectedAt.getTime() - 3_600_000 * (1 + (i % 24))).toISOString(),
    })),
    services: Array.from({ length: 150 }, (_, i) => ({
      name: `svc-${String(i).padStart(3, '0')}.service`,
      description: `Service ${i}`,
      load_state: 'loaded',
      active_state: i % 10 === 0 ? 'inactive' : 'active',
      sub_state: i % 10 === 0 ? 'dead' : 'running',
      enabled: i % 10 !== 0,
      main_pid: i % 10 === 0 ? null : 100 + i,
      manager: 'systemd',
    })),
    packages: Array.from({ length: packages }, (_, i) => ({
      name: `pkg-${String(i).padStart(4, '0')}`,
      // A few packages move on between generations, most stay.
      version: i % 100 === 0 ? `2.${g}.${i}` : `1.0.${i}`,
      architecture: i % 5 === 0 ? 'all' : 'amd64',
      manager: 'dpkg',
      description: `Package number ${i} with a description of typical length`,
      installed_size_bytes: 10_240 * (1 + (i % 300)),
    })),
    ports: Array.from({ length: 40 }, (_, i) => ({
      protocol: i % 4 === 0 ? ('udp' as const) : ('tcp' as const),
      local_address: i % 2 === 0 ? '0.0.0.0' : '127.0.0.1',
      local_port: [22, 80, 443, 5432, 6379][i % 5]! + Math.floor(i / 5) * 1000,
      state: i % 4 === 0 ? 'UNCONN' : 'LISTEN',
      pid: 100 + i,
      process_name: `worker-${i % 40}`,
    })),
    interfaces: [
      {
        name: 'lo',
        ipv4_addresses: ['127.0.0.1'],
        ipv6_addresses: ['::1'],
        mtu: 65536,
        state: 'up',
        rx_bytes: 10_000 + g,
        tx_bytes: 10_000 + g,
      },
      {
        name: 'eth0',
        mac_address: '52:54:00:12:34:56',
        ipv4_addresses: [`10.0.0.${10 + g}`],
        ipv6_addresses: ['fe80::1'],
        mtu: 1500,
        state: 'up',
        speed_mbps: 10_000,
        rx_bytes: 9_007_199_254_740 + g,
        tx_bytes: 123_456_789,
      },
      { name: 'docker0', mac_address: '02:42:ac:11:00:01', ipv4_addresses: ['172.17.0.1'], mtu: 1500, state: 'down' },
    ],
    users: Array.from({ length: 35 }, (_, i) => ({
      username: i === 0 ? 'root' : `user${String(i).padStart(2, '0')}`,
      uid: i === 0 ? 0 : i < 20 ? i : 1000 + i,
      gid: i === 0 ? 0 : i < 20 ? i : 1000 + i,
      home: i === 0 ? '/root' : `/home/user${i}`,
      shell: i < 20 ? '/usr/sbin/nologin' : '/bin/bash',
      is_system: i < 20,
      groups: i === 0 ? ['root'] : ['users', ...(i % 7 === 0 ? ['sudo'] : [])],
    })),
    cron_jobs: Array.from({ length: 10 }, (_, i) => ({
      username: i < 5 ? 'root' : 'www-data',
      schedule: `${i} * * * *`,
      command: `/usr/local/bin/job-${i}.sh`,
      source: i < 3 ? '/etc/crontab' : i < 8 ? `/etc/cron.d/job${i}` : `systemd-timer:job${i}.timer`,
      is_active: i !== 9,
    })),
    gpu_devices:
      g === 0
        ? [
            {
              device_index: 0,
              name: 'NVIDIA A10',
              vendor: 'NVIDIA',
              driver_version: '535.104',
              memory_total_bytes: 24_146_608_128,
              pci_bus_id: '0000:65:00.0',
              architecture: 'Ampere',
            },
          ]
        : [],
    firewall_rules: Array.from({ length: 20 }, (_, i) => ({
      chain: i < 15 ? 'INPUT' : 'FORWARD',
      rule_number: i + 1,
      target: i % 6 === 5 ? 'DROP' : 'ACCEPT',
      protocol: 'tcp',
      port: String([22, 80, 443][i % 3]),
      tool: 'iptables',
      table_name: 'filter',
      rule_text: `-A INPUT -p tcp --dport ${[22, 80, 443][i % 3]} -j ACCEPT # ${i}`,
    })),
    certificates: Array.from({ length: 10 }, (_, i) => ({
      subject: `CN=site${i}.example.com`,
      issuer: i === 0 ? 'CN=Root CA' : 'CN=Intermediate CA',
      not_before: '2026-01-01T00:00:00Z',
      not_after: new Date(Date.UTC(2027, i, 1)).toISOString(),
      fingerprint_sha256: fingerprint(i + 1),
      is_ca: i === 0,
      key_algorithm: 'RSA',
      key_bits: 2048,
      path: `/etc/ssl/certs/site${i}.pem`,
    })),
    kernel_modules: Array.from({ length: 80 }, (_, i) => ({
      name: `mod_${String(i).padStart(2, '0')}`,
      size_bytes: 16_384 * (1 + i),
      instances: i % 3,
      used_by: i % 4 === 0 ? ['mod_00'] : [],
    })),
    security_items: [
      { category: 'sshd', key: 'PermitRootLogin', value: 'no' },
      { category: 'sshd', key: 'PasswordAuthentication', value: 'no' },
      { category: 'kernel', key: 'kernel.randomize_va_space', value: '2' },
      { category: 'apparmor', key: 'status', value: 'enabled' },
      { category: 'updates', key: 'pending_security', value: String(g) },
    ],
    containers: [
      {
        container_id: 'a1b2c3',
        name: 'redis',
        image: 'redis:7',
        state: 'running',
        status: 'Up 2 hours',
        runtime: 'docker',
        created_at: '2026-11-01T00:00:00Z',
        labels: { app: 'cache' },
      },
      {
        container_id: 'd4e5f6',
        name: 'nginx',
        image: 'nginx:1.27',
        state: 'running',
        status: 'Up 2 hours',
        runtime: 'docker',
        labels: {},
      },
    ],
    integrations: [
      {
        integration_id: 'postgresql',
        collector_name: 'postgres-collector',
        status: 'ok',
        status_message: '',
        config: {
          max_connections: { value: 200, source: 'postgresql.conf', category: 'connections' },
          shared_buffers: { value: 4096, unit: 'MB', source: 'postgresql.conf', category: 'memory' },
        },
      },
      {
        integration_id: 'redis',
        collector_name: 'redis-collector',
        status: g === 0 ? 'ok' : 'warning',
        status_message: g === 0 ? '' : 'memory above 80%',
      },
    ],
  };
}

/** Stores a snapshot the way the ingest does (for tests of what is read, not of the consumer). */
export async function store(
  sys: TestSystem,
  host: TestHost,
  snapshot: InventorySnapshotIn,
  receivedAt = new Date(sys.clock.now()),
): Promise<SnapshotOutcome> {
  const orm = await sys.stores.orm();
  return storeSnapshot(orm.em.fork(), host, InventorySnapshot.parse(snapshot), receivedAt);
}

/** Publishes raw bytes on the agent's inventory subject (telemetry subjects are not namespaced); the stream sequence. */
export async function publishInventory(sys: TestSystem, agentId: string, payload: unknown): Promise<number> {
  const bytes = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const ack = await jetstream(sys.nc).publish(`svc.agent.${agentId}.inventory`, bytes);
  return ack.seq;
}

/** Waits until the inventory consumer has settled (acked, skipped or dead-lettered) everything up to `seq`. */
export async function waitForIngest(sys: TestSystem, seq: number, timeoutMs = 20_000): Promise<void> {
  const jsm = await jetstreamManager(sys.nc);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const info = await jsm.consumers.info('SVC_TELEMETRY', wireDurableName(INVENTORY_DURABLE));
    if (info.ack_floor.stream_seq >= seq) return;
    if (Date.now() > deadline)
      expect.fail(`inventory consumer did not settle stream sequence ${seq} (ack floor ${info.ack_floor.stream_seq})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function count(sys: TestSystem, table: string, hostId: string): Promise<number> {
  const [row] = await sys.sql<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE host_id = ?`, [hostId]);
  return row?.n ?? 0;
}

export const INVENTORY_TABLE_NAMES = [
  'host_processes',
  'host_services',
  'host_packages',
  'host_ports',
  'host_interfaces',
  'host_users',
  'host_cron_jobs',
  'host_gpu_devices',
  'host_firewall_rules',
  'host_certificates',
  'host_kernel_modules',
  'host_security_items',
  'host_containers',
] as const;

export async function counts(sys: TestSystem, hostId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of INVENTORY_TABLE_NAMES) out[t] = await count(sys, t, hostId);
  return out;
}
