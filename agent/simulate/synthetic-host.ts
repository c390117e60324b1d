import type { z } from 'zod';
import type {
  CertificateRecord,
  ContainerRecord,
  CronJobRecord,
  FirewallRuleRecord,
  HostFacts,
  IntegrationReport,
  InterfaceRecord,
  KernelModuleRecord,
  PackageRecord,
  PortRecord,
  ProcessRecord,
  SecurityItemRecord,
  ServiceRecord,
  SystemUserRecord,
} from '../../contracts/domains/agent-telemetry.ts';
import { seededRandom } from '../../platform/seeded-random.ts';
import { metricSeries, type Series } from './synthetic-series.ts';

/**
 * The records of a made-up host: deterministic per agent index (one seeded generator, drawn from in a fixed order),
 * realistic in size (~300 processes, ~1,500 packages), built once per agent; the package list once per process,
 * shared by all agents.
 */

export type In<T extends z.ZodType> = z.input<T>;
type Proc = In<typeof ProcessRecord>;
type Pkg = In<typeof PackageRecord>;

export const pick = <T>(rnd: () => number, items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
export const round2 = (n: number): number => Math.round(n * 100) / 100;

const STEMS = [
  'acl',
  'adduser',
  'apt',
  'attr',
  'base-files',
  'bash',
  'bsdutils',
  'bzip2',
  'ca-certificates',
  'coreutils',
  'cron',
  'curl',
  'dash',
  'dbus',
  'debconf',
  'diffutils',
  'dpkg',
  'e2fsprogs',
  'findutils',
  'gcc',
  'gzip',
  'grep',
  'gnupg',
  'hostname',
  'init',
  'iproute2',
  'iptables',
  'kmod',
  'less',
  'login',
  'logrotate',
  'lsb',
  'mawk',
  'mount',
  'ncurses',
  'netbase',
  'openssh',
  'openssl',
  'passwd',
  'perl',
  'procps',
  'python3',
  'readline',
  'rsyslog',
  'sed',
  'sensible-utils',
  'systemd',
  'sudo',
  'tar',
  'tzdata',
  'udev',
  'util-linux',
  'vim',
  'wget',
  'xz-utils',
  'zlib',
  'krb5',
  'ldap',
  'sasl2',
  'nghttp2',
  'brotli',
  'zstd',
  'lz4',
  'pcre2',
  'gmp',
  'nettle',
  'gnutls',
  'p11-kit',
  'tasn1',
  'unistring',
  'idn2',
  'psl',
  'ssh2',
  'rtmp',
  'expat',
  'xml2',
  'xslt',
  'yaml',
  'json-c',
  'jansson',
  'uuid',
  'blkid',
  'fdisk',
  'smartcols',
  'cap2',
  'seccomp',
  'selinux',
  'semanage',
  'sepol',
  'apparmor',
  'audit',
  'pam',
  'nss',
  'nspr',
  'sqlite3',
  'db5.3',
  'gdbm',
  'ffi',
  'mpfr',
  'isl',
  'elf',
  'dw',
];
const SUFFIXES = [
  '',
  '-common',
  '-dev',
  '-data',
  '-utils',
  '-bin',
  '-doc',
  '-tools',
  '-dbg',
  '-modules',
  '-base',
  '-extra',
  '-plugins',
  '-runtime',
  '-locale',
];

let sharedPackages: Pkg[] | undefined;
/** ~1,480 packages every simulated host has (one array for the whole process). */
function basePackages(): Pkg[] {
  if (sharedPackages) return sharedPackages;
  const rnd = seededRandom(0x5eed);
  const out: Pkg[] = [];
  for (const suffix of SUFFIXES) {
    for (const stem of STEMS) {
      if (out.length >= 1_480) break;
      const lib = suffix === '-dev' || suffix === '-dbg' || rnd() < 0.3;
      const name = `${lib && !stem.startsWith('lib') ? 'lib' : ''}${stem}${suffix}`;
      out.push({
        name,
        version: `${1 + Math.floor(rnd() * 9)}.${Math.floor(rnd() * 30)}.${Math.floor(rnd() * 20)}-${1 + Math.floor(rnd() * 5)}ubuntu${Math.floor(rnd() * 4)}`,
        architecture: rnd() < 0.15 ? 'all' : 'amd64',
        manager: 'dpkg',
        description: `${stem} ${suffix ? suffix.slice(1) : 'package'}: ${pick(rnd, ['shared library', 'command line tools', 'development files', 'documentation', 'runtime support', 'architecture independent data'])}`,
        installed_size_bytes: Math.floor(rnd() * 8_000) * 1024,
      });
    }
  }
  sharedPackages = out;
  return out;
}

const PROCESS_NAMES = [
  ['systemd', '/sbin/init splash'],
  ['kthreadd', ''],
  ['sshd', 'sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups'],
  ['cron', '/usr/sbin/cron -f'],
  ['rsyslogd', '/usr/sbin/rsyslogd -n -iNONE'],
  ['systemd-journal', '/lib/systemd/systemd-journald'],
  ['systemd-udevd', '/lib/systemd/systemd-udevd'],
  ['dbus-daemon', '@dbus-daemon --system --address=systemd: --nofork --nopidfile --systemd-activation --syslog-only'],
  ['nginx', 'nginx: worker process'],
  ['postgres', 'postgres: 15/main: checkpointer'],
  ['redis-server', '/usr/bin/redis-server 127.0.0.1:6379'],
  ['node', 'node /srv/app/server.js'],
  ['python3', '/usr/bin/python3 /opt/worker/run.py --queue default'],
  ['containerd', '/usr/bin/containerd'],
  ['dockerd', '/usr/bin/dockerd -H fd://'],
  ['kworker/0:1', ''],
  ['ksoftirqd/0', ''],
  ['migration/0', ''],
  ['rcu_sched', ''],
  ['bash', '-bash'],
  ['agetty', '/sbin/agetty -o -p -- \\u --noclear tty1 linux'],
] as const;
const USERS = ['root', 'www-data', 'postgres', 'redis', 'syslog', 'messagebus', 'deploy', 'nobody'];

/** The records of one simulated host, and its metric series. */
export interface SyntheticHost {
  facts: In<typeof HostFacts>;
  processes: Proc[];
  packages: Pkg[];
  services: In<typeof ServiceRecord>[];
  ports: In<typeof PortRecord>[];
  interfaces: In<typeof InterfaceRecord>[];
  users: In<typeof SystemUserRecord>[];
  cron: In<typeof CronJobRecord>[];
  modules: In<typeof KernelModuleRecord>[];
  security: In<typeof SecurityItemRecord>[];
  firewall: In<typeof FirewallRuleRecord>[];
  certificates: In<typeof CertificateRecord>[];
  containers: In<typeof ContainerRecord>[];
  integrations: In<typeof IntegrationReport>[];
  integrationConfig: Record<string, NonNullable<In<typeof IntegrationReport>['config']>>;
  series: Series[];
}

/** The host's size and address: what the other records are derived from. */
interface HostShape {
  index: number;
  ubuntu: boolean;
  cores: number;
  memory: number;
  ip: string;
}

/**
 * Everything about simulated host `index` that does not change between snapshots. The seeded generator is drawn from
 * in this order (boot time, processes, services, metric series): another order would change every simulated host.
 */
export function buildHost(index: number): SyntheticHost {
  const rnd = seededRandom(index * 2654435761);
  const cores = [2, 4, 8, 16][index % 4]!;
  const shape: HostShape = {
    index,
    ubuntu: index % 3 !== 0,
    cores,
    memory: cores * 2 * 1024 ** 3,
    ip: `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
  };
  const facts = hostFacts(shape);
  const bootedAt = Date.now() - Math.floor(rnd() * 30 * 86_400_000);
  const processes = hostProcesses(shape, rnd, bootedAt);
  const packages = [...basePackages(), ...ownPackages(index)];
  const services = hostServices(rnd, processes);
  const containers = hostContainers(index, bootedAt);
  return {
    facts,
    processes,
    packages,
    services,
    ports: hostPorts(shape, processes),
    interfaces: hostInterfaces(shape),
    users: hostUsers(),
    cron: cronJobs(index),
    modules: kernelModules(),
    security: securityItems(index),
    firewall: firewallRules(),
    certificates: hostCertificates(index),
    containers,
    integrations: hostIntegrations(index),
    integrationConfig: integrationConfigOf(index),
    series: metricSeries(rnd, { cores, memory: shape.memory, bootedAt, processes, containers }),
  };
}

function hostFacts({ index, ubuntu, cores, memory, ip }: HostShape): In<typeof HostFacts> {
  return {
    hostname: `sim-${index}`,
    ip_address: ip,
    os: 'linux',
    os_version: ubuntu ? 'Ubuntu 22.04.4 LTS' : 'Debian GNU/Linux 12 (bookworm)',
    kernel_version: ubuntu ? '5.15.0-105-generic' : '6.1.0-21-amd64',
    arch: 'x86_64',
    cpu_cores: cores,
    memory_total_bytes: memory,
  };
}

function hostProcesses({ index, memory }: HostShape, rnd: () => number, bootedAt: number): Proc[] {
  const processes: Proc[] = [];
  for (let i = 0; i < 300; i++) {
    const [name, command] = i < PROCESS_NAMES.length ? PROCESS_NAMES[i]! : pick(rnd, PROCESS_NAMES);
    const rss = Math.floor(rnd() * 200) * 1024 * 1024;
    processes.push({
      pid: i === 0 ? 1 : 100 + i * 7 + (index % 97),
      name,
      command: command || `[${name}]`,
      username: i < 20 ? 'root' : pick(rnd, USERS),
      state: rnd() < 0.9 ? 'S' : 'R',
      ppid: i === 0 ? 0 : 1,
      threads: 1 + Math.floor(rnd() * 16),
      cpu_percent: round2(rnd() * 2),
      memory_percent: round2((rss / memory) * 100),
      memory_rss_bytes: rss,
      memory_vms_bytes: rss * 4,
      started_at: new Date(bootedAt + Math.floor(rnd() * 86_400_000)).toISOString(),
    });
  }
  return processes;
}

/** The host's own software, beside the shared base packages. */
function ownPackages(index: number): Pkg[] {
  const own: Pkg[] = [];
  for (let i = 0; i < 20; i++)
    own.push({
      name: `app-${index % 50}-component-${i}`,
      version: `2.${index % 7}.${i}`,
      architecture: 'amd64',
      manager: 'dpkg',
      description: 'in-house component',
      installed_size_bytes: 512 * 1024,
    });
  return own;
}

function hostServices(rnd: () => number, processes: Proc[]): In<typeof ServiceRecord>[] {
  const services: In<typeof ServiceRecord>[] = [];
  for (let i = 0; i < 60; i++) {
    const name =
      i < PROCESS_NAMES.length ? `${PROCESS_NAMES[i]![0].replace(/[/:].*$/, '')}.service` : `unit-${i}.service`;
    const active = rnd() < 0.8;
    services.push({
      name,
      description: `Simulated ${name}`,
      load_state: 'loaded',
      active_state: active ? 'active' : 'inactive',
      sub_state: active ? 'running' : 'dead',
      enabled: active,
      main_pid: active ? processes[i % 300]!.pid : null,
      manager: 'systemd',
    });
  }
  return services;
}

function hostPorts({ index, ip }: HostShape, processes: Proc[]): In<typeof PortRecord>[] {
  const ports: In<typeof PortRecord>[] = [
    {
      protocol: 'tcp',
      local_address: '0.0.0.0',
      local_port: 22,
      state: 'LISTEN',
      pid: processes[2]!.pid,
      process_name: 'sshd',
    },
    {
      protocol: 'tcp6',
      local_address: '::',
      local_port: 22,
      state: 'LISTEN',
      pid: processes[2]!.pid,
      process_name: 'sshd',
    },
    { protocol: 'udp', local_address: '127.0.0.53', local_port: 53, state: 'UNCONN', pid: null, process_name: '' },
  ];
  for (let i = 0; i < 15; i++)
    ports.push({
      protocol: 'tcp',
      local_address: ip,
      local_port: 443,
      remote_address: `10.0.${i}.${(index + i) % 250}`,
      remote_port: 40_000 + i,
      state: 'ESTABLISHED',
      pid: processes[8]!.pid,
      process_name: 'nginx',
    });
  return ports;
}

function hostInterfaces({ index, ip }: HostShape): In<typeof InterfaceRecord>[] {
  return [
    {
      name: 'lo',
      ipv4_addresses: ['127.0.0.1'],
      ipv6_addresses: ['::1'],
      mtu: 65536,
      state: 'up',
      rx_bytes: 0,
      tx_bytes: 0,
    },
    {
      name: 'eth0',
      mac_address: `02:00:${[(index >> 24) & 255, (index >> 16) & 255, (index >> 8) & 255, index & 255].map((b) => b.toString(16).padStart(2, '0')).join(':')}`,
      ipv4_addresses: [ip],
      mtu: 1500,
      state: 'up',
      speed_mbps: 10_000,
    },
  ];
}

function hostUsers(): In<typeof SystemUserRecord>[] {
  const users: In<typeof SystemUserRecord>[] = [];
  for (let i = 0; i < 30; i++) {
    const name = i < USERS.length ? USERS[i]! : `user${i}`;
    const uid = name === 'root' ? 0 : i < USERS.length ? 100 + i : 1000 + i;
    users.push({
      username: name,
      uid,
      gid: uid,
      home: name === 'root' ? '/root' : `/home/${name}`,
      shell: uid >= 1000 || uid === 0 ? '/bin/bash' : '/usr/sbin/nologin',
      is_system: uid > 0 && uid < 1000,
      groups: uid >= 1000 ? [name, 'sudo'] : [name],
    });
  }
  return users;
}

function cronJobs(index: number): In<typeof CronJobRecord>[] {
  return [
    {
      username: 'root',
      schedule: '17 * * * *',
      command: 'cd / && run-parts --report /etc/cron.hourly',
      source: '/etc/crontab',
      is_active: true,
    },
    {
      username: 'root',
      schedule: '25 6 * * *',
      command: 'test -x /usr/sbin/anacron || run-parts --report /etc/cron.daily',
      source: '/etc/crontab',
      is_active: true,
    },
    {
      username: 'deploy',
      schedule: `*/${5 + (index % 10)} * * * *`,
      command: '/opt/app/bin/sync --quiet',
      source: 'crontab:deploy',
      is_active: true,
    },
  ];
}

function kernelModules(): In<typeof KernelModuleRecord>[] {
  const modules: In<typeof KernelModuleRecord>[] = [];
  for (let i = 0; i < 80; i++)
    modules.push({
      name: `mod_${STEMS[i % STEMS.length]!.replace(/[^a-z0-9]/g, '_')}_${i}`,
      size_bytes: 16_384 + i * 1024,
      instances: i % 3,
      used_by: i % 5 === 0 ? ['ip_tables'] : [],
    });
  return modules;
}

function securityItems(index: number): In<typeof SecurityItemRecord>[] {
  return [
    { category: 'sshd', key: 'PermitRootLogin', value: index % 10 === 0 ? 'yes' : 'prohibit-password' },
    { category: 'sshd', key: 'PasswordAuthentication', value: 'no' },
    { category: 'kernel', key: 'kernel.randomize_va_space', value: '2' },
    { category: 'apparmor', key: 'enabled', value: 'Y' },
    { category: 'updates', key: 'security_updates_pending', value: String(index % 7) },
  ];
}

function firewallRules(): In<typeof FirewallRuleRecord>[] {
  const firewall: In<typeof FirewallRuleRecord>[] = [];
  for (let i = 0; i < 10; i++)
    firewall.push({
      chain: 'INPUT',
      rule_number: i + 1,
      target: i === 9 ? 'DROP' : 'ACCEPT',
      protocol: 'tcp',
      port: String([22, 80, 443, 5432, 6379, 8080, 9100, 9090, 3000, 0][i]),
      tool: 'iptables',
      table_name: 'filter',
      rule_text: `-A INPUT -p tcp --dport ${[22, 80, 443, 5432, 6379, 8080, 9100, 9090, 3000, 0][i]} -j ACCEPT`,
    });
  return firewall;
}

function hostCertificates(index: number): In<typeof CertificateRecord>[] {
  const fingerprint = Array.from({ length: 32 }, (_, i) =>
    ((index * 31 + i * 17) & 255).toString(16).padStart(2, '0').toUpperCase(),
  ).join(':');
  return [
    {
      subject: `CN=sim-${index}.example.internal`,
      issuer: 'CN=Simulated Internal CA',
      not_before: '2026-01-01T00:00:00Z',
      not_after: '2027-01-01T00:00:00Z',
      fingerprint_sha256: fingerprint,
      is_ca: false,
      key_algorithm: 'RSA',
      key_bits: 2048,
      path: '/etc/ssl/certs/host.pem',
    },
  ];
}

function hostContainers(index: number, bootedAt: number): In<typeof ContainerRecord>[] {
  const containers: In<typeof ContainerRecord>[] = [];
  if (index % 4 === 0) {
    for (let i = 0; i < 5; i++)
      containers.push({
        container_id: `${index.toString(16).padStart(8, '0')}${i.toString(16).padStart(56, '0')}`,
        name: `app-${i}`,
        image: `registry.example.internal/app-${i}:1.${index % 9}`,
        state: 'running',
        status: 'Up 3 days',
        runtime: 'docker',
        created_at: new Date(bootedAt).toISOString(),
        labels: { 'com.example.team': 'core' },
      });
  }
  return containers;
}

function hostIntegrations(index: number): In<typeof IntegrationReport>[] {
  const integrations: In<typeof IntegrationReport>[] = [];
  if (index % 3 === 0)
    integrations.push({ integration_id: 'postgresql', collector_name: 'postgresql', status: 'ok', status_message: '' });
  if (index % 4 === 0)
    integrations.push({
      integration_id: 'redis',
      collector_name: 'redis',
      status: index % 40 === 0 ? 'warning' : 'ok',
      status_message: index % 40 === 0 ? 'memory above 80 %' : '',
    });
  if (index % 2 === 0)
    integrations.push({ integration_id: 'nginx', collector_name: 'nginx', status: 'ok', status_message: '' });
  return integrations;
}

function integrationConfigOf(index: number): SyntheticHost['integrationConfig'] {
  return {
    postgresql: {
      max_connections: {
        value: 100 + (index % 5) * 50,
        source: '/etc/postgresql/15/main/postgresql.conf',
        category: 'connections',
      },
      shared_buffers: { value: 128, unit: 'MB', source: '/etc/postgresql/15/main/postgresql.conf', category: 'memory' },
    },
    redis: {
      maxmemory: { value: 256, unit: 'MB', source: '/etc/redis/redis.conf', category: 'memory' },
      appendonly: { value: false, source: '/etc/redis/redis.conf', category: 'persistence' },
    },
    nginx: {
      worker_processes: { value: 'auto', source: '/etc/nginx/nginx.conf', category: 'workers' },
      keepalive_timeout: { value: 65, unit: 's', source: '/etc/nginx/nginx.conf', category: 'connections' },
    },
  };
}
