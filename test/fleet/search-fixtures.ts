import { randomUUID } from 'node:crypto';
import type { TestSystem } from '../support/system.ts';

/**
 * Hosts with known inventory for the search tests, straight into PostgreSQL (ingest is not what they test): the host
 * row with every field PQL reads, and its services, containers and packages.
 */

export interface ServiceRow {
  name: string;
  active_state: string;
  sub_state: string;
  enabled: boolean | null;
  load_state?: string;
}
export interface ContainerRow {
  name: string;
  image: string;
  state: string;
  runtime: string;
}
export interface PackageRow {
  name: string;
  version: string;
  manager?: string;
  architecture?: string;
}

export interface FixtureHost {
  hostname: string;
  ip_address?: string;
  os?: string;
  os_version?: string;
  kernel_version?: string;
  arch?: string;
  cpu_cores?: number;
  memory_total_bytes?: number;
  agent_status?: 'online' | 'offline';
  agent_version?: string;
  last_seen_at?: string | null;
  tags?: Record<string, string>;
  labels?: Record<string, string>;
  services?: ServiceRow[];
  containers?: ContainerRow[];
  packages?: PackageRow[];
}

export async function insertEnvironment(
  sys: TestSystem,
  clientId: string,
  slug: string,
): Promise<{ id: string; client_id: string }> {
  const id = randomUUID();
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [id, clientId, slug, slug]);
  return { id, client_id: clientId };
}

export async function insertSearchHost(
  sys: TestSystem,
  env: { id: string; client_id: string },
  h: FixtureHost,
): Promise<string> {
  const id = randomUUID();
  await sys.sql(
    `INSERT INTO hosts (id, environment_id, client_id, hostname, ip_address, os, os_version, kernel_version, arch, cpu_cores, memory_total_bytes,
       agent_status, agent_version, last_seen_at, tags, labels)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb)`,
    [
      id,
      env.id,
      env.client_id,
      h.hostname,
      h.ip_address ?? '',
      h.os ?? '',
      h.os_version ?? '',
      h.kernel_version ?? '',
      h.arch ?? '',
      h.cpu_cores ?? 0,
      h.memory_total_bytes ?? 0,
      h.agent_status ?? 'offline',
      h.agent_version ?? '',
      h.last_seen_at ?? null,
      JSON.stringify(h.tags ?? {}),
      JSON.stringify(h.labels ?? {}),
    ],
  );
  for (const s of h.services ?? []) {
    await sys.sql(
      `INSERT INTO host_services (host_id, name, description, load_state, active_state, sub_state, enabled, main_pid, manager) VALUES (?, ?, '', ?, ?, ?, ?, NULL, 'systemd')`,
      [id, s.name, s.load_state ?? 'loaded', s.active_state, s.sub_state, s.enabled],
    );
  }
  for (const c of h.containers ?? []) {
    await sys.sql(
      `INSERT INTO host_containers (host_id, container_id, name, image, state, status, runtime, labels) VALUES (?, ?, ?, ?, ?, '', ?, '{}'::jsonb)`,
      [id, randomUUID(), c.name, c.image, c.state, c.runtime],
    );
  }
  for (const p of h.packages ?? []) {
    await sys.sql(
      `INSERT INTO host_packages (host_id, name, version, architecture, manager, description) VALUES (?, ?, ?, ?, ?, '')`,
      [id, p.name, p.version, p.architecture ?? 'amd64', p.manager ?? 'apt'],
    );
  }
  return id;
}

const GiB = 1024 ** 3;

/**
 * Client A's fleet: four Linux servers with inventory, a Windows host, and five hosts whose names test glob escaping.
 * Keys are the names the tests use for expected results.
 */
export const FLEET_A: Record<string, FixtureHost & { env: 'prod' | 'staging' }> = {
  web1: {
    env: 'prod',
    hostname: 'web-01',
    ip_address: '10.0.0.11',
    os: 'linux',
    os_version: '22.04',
    kernel_version: '5.15.0-91-generic',
    arch: 'amd64',
    cpu_cores: 4,
    memory_total_bytes: 8 * GiB,
    agent_status: 'online',
    agent_version: '1.4.2',
    last_seen_at: '2026-01-10T10:00:00Z',
    tags: { env: 'prod', team: 'web' },
    labels: { region: 'eu-west', 'app.kubernetes.io/name': 'frontend' },
    services: [
      { name: 'nginx', active_state: 'active', sub_state: 'running', enabled: true },
      { name: 'sshd', active_state: 'active', sub_state: 'running', enabled: true },
    ],
    containers: [
      { name: 'web', image: 'nginx:1.25', state: 'running', runtime: 'docker' },
      { name: 'sidecar', image: 'envoyproxy/envoy:v1.29', state: 'running', runtime: 'docker' },
    ],
    packages: [
      { name: 'openssl', version: '3.0.2-0ubuntu1.12' },
      { name: 'nginx', version: '1.18.0-6ubuntu14' },
      { name: 'libc6', version: '2.35-0ubuntu3' },
    ],
  },
  web2: {
    env: 'prod',
    hostname: 'web-02',
    ip_address: '10.0.0.12',
    os: 'linux',
    os_version: '22.04',
    kernel_version: '5.15.0-91-generic',
    arch: 'arm64',
    cpu_cores: 4,
    memory_total_bytes: 16 * GiB,
    agent_status: 'offline',
    agent_version: '1.3.9',
    last_seen_at: null,
    tags: { env: 'prod', team: 'web' },
    labels: { region: 'eu-west' },
    services: [
      { name: 'nginx', active_state: 'failed', sub_state: 'failed', enabled: true },
      { name: 'sshd', active_state: 'active', sub_state: 'running', enabled: true },
    ],
    packages: [
      { name: 'openssl', version: '3.0.13-0ubuntu3', architecture: 'arm64' },
      { name: 'nginx', version: '1.24.0-2ubuntu7', architecture: 'arm64' },
    ],
  },
  db1: {
    env: 'prod',
    hostname: 'db-01',
    ip_address: '10.0.1.21',
    os: 'linux',
    os_version: '24.04',
    kernel_version: '6.8.0-31-generic',
    arch: 'amd64',
    cpu_cores: 16,
    memory_total_bytes: 64 * GiB,
    agent_status: 'online',
    agent_version: '1.4.10',
    last_seen_at: '2026-01-10T09:00:00Z',
    tags: { env: 'prod', team: 'data' },
    labels: { region: 'eu-west', role: '' },
    services: [
      { name: 'postgresql', active_state: 'active', sub_state: 'exited', enabled: true },
      { name: 'sshd', active_state: 'active', sub_state: 'running', enabled: true },
    ],
    packages: [
      { name: 'openssl', version: '1:3.0.13-0ubuntu3.1' },
      { name: 'postgresql-16', version: '16.2-1' },
    ],
  },
  db2: {
    env: 'staging',
    hostname: 'db-02',
    ip_address: '10.1.1.22',
    os: 'linux',
    os_version: '24.04',
    kernel_version: '6.8.0-31-generic',
    arch: 'amd64',
    cpu_cores: 8,
    memory_total_bytes: 32 * GiB,
    agent_status: 'online',
    agent_version: '1.4.2',
    last_seen_at: '2026-01-09T00:00:00Z',
    tags: { env: 'staging', team: 'data' },
    labels: { region: 'us-east' },
    services: [
      { name: 'postgresql', active_state: 'inactive', sub_state: 'dead', enabled: false },
      { name: 'cron', active_state: 'active', sub_state: 'running', enabled: null },
    ],
    containers: [{ name: 'pg-exporter', image: 'prom/postgres-exporter:v0.15.0', state: 'exited', runtime: 'podman' }],
    packages: [
      { name: 'openssl', version: '3.0.2-0ubuntu1.12' },
      { name: 'postgresql-16', version: '16.1-1' },
    ],
  },
  win: {
    env: 'staging',
    hostname: 'win-01',
    ip_address: '10.1.2.30',
    os: 'windows',
    os_version: '10.0.20348',
    arch: 'amd64',
    cpu_cores: 2,
    memory_total_bytes: 4 * GiB,
    agent_status: 'offline',
    agent_version: '1.2.0',
    last_seen_at: '2025-12-01T00:00:00Z',
  },
  // Glob escaping: `_` and `%` are LIKE wildcards, `*` the PQL one.
  g1: { env: 'staging', hostname: 'a_b', os: 'bsd', cpu_cores: 1, memory_total_bytes: GiB },
  g2: { env: 'staging', hostname: 'axb', os: 'bsd', cpu_cores: 1, memory_total_bytes: GiB },
  g3: { env: 'staging', hostname: 'a%b', os: 'bsd', cpu_cores: 1, memory_total_bytes: GiB },
  g4: { env: 'staging', hostname: 'a*b', os: 'bsd', cpu_cores: 1, memory_total_bytes: GiB },
  g5: { env: 'staging', hostname: 'A_B', os: 'bsd', cpu_cores: 1, memory_total_bytes: GiB },
};

/** Inserts a fleet into a client: environments `prod` and `staging`, the hosts; returns key → host id. */
export async function insertFleet(
  sys: TestSystem,
  clientId: string,
  fleet: Record<string, FixtureHost & { env: 'prod' | 'staging' }>,
): Promise<Record<string, string>> {
  const envs = {
    prod: await insertEnvironment(sys, clientId, 'prod'),
    staging: await insertEnvironment(sys, clientId, 'staging'),
  };
  const ids: Record<string, string> = {};
  for (const [key, h] of Object.entries(fleet)) ids[key] = await insertSearchHost(sys, envs[h.env], h);
  return ids;
}
