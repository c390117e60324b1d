import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createConnection, createServer, type Server } from 'node:net';
import { cpus, hostname, tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { connect as natsConnect } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InventorySnapshot,
  IntegrationReport,
  MetricBatch,
  RESERVED_LABELS,
  type InventorySnapshotIn,
  type MetricBatchIn,
} from '../../contracts/domains/agent-telemetry.ts';
import { parseOsRelease } from '../../agent/collect/facts.ts';
import { createLinuxCollector } from '../../agent/collect/linux.ts';
import { readSockets, socketInodesOf } from '../../agent/collect/ports.ts';
import { probeRedis } from '../../agent/collect/probes.ts';
import { listPids } from '../../agent/collect/read.ts';
import { freePort, stopProcess, waitFor } from '../support/processes.ts';

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });

// ---------------------------------------------------------------------------------------------------------------
// This machine: each claim checked against an independent source (the parsers on fixtures: collectors.unit.test.ts).

describe('inventory of this machine', () => {
  let server: Server;
  let port: number;
  let inv: InventorySnapshotIn;
  let parsed: InventorySnapshot;
  let elapsedMs: number;

  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
    const collector = createLinuxCollector();
    await collector.inventory({});
    const t0 = performance.now();
    inv = await collector.inventory({ team: 'ops' });
    elapsedMs = performance.now() - t0;
    parsed = InventorySnapshot.parse(inv);
  });
  afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  it('parses with InventorySnapshot and is collected in about a second', () => {
    expect(parsed.labels).toEqual({ team: 'ops' });
    // ~250 ms when the machine is idle; the bound leaves room for the other work sharing these two cores.
    expect(elapsedMs).toBeLessThan(3_000);
  });

  it('facts', () => {
    const osRelease = parseOsRelease(readFileSync('/etc/os-release', 'utf8'));
    expect(parsed.facts).toMatchObject({
      hostname: hostname(),
      os: osRelease.ID,
      os_version: osRelease.VERSION_ID ?? '',
      cpu_cores: cpus().length,
      kernel_version: sh('uname', ['-r']).trim(),
      arch: sh('uname', ['-m']).trim(),
    });
    const memTotalKb = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))![1]);
    expect(parsed.facts.memory_total_bytes).toBe(memTotalKb * 1024);
    // `ip route get` answers with the source address the kernel picks for leaving the host.
    const route =
      existsSync('/usr/sbin/ip') || existsSync('/sbin/ip')
        ? /\bsrc\s+(\S+)/.exec(sh('ip', ['-4', 'route', 'get', '1.1.1.1']))?.[1]
        : undefined;
    if (route) expect(parsed.facts.ip_address).toBe(route);
  });

  it('processes: this test process with its command line and user', () => {
    const me = parsed.processes.find((p) => p.pid === process.pid);
    expect(me).toBeDefined();
    expect(me!.command).toBe(
      readFileSync('/proc/self/cmdline', 'utf8')
        .split('\0')
        .filter((a) => a !== '')
        .join(' '),
    );
    expect(me!.username).toBe(userInfo().username);
    expect(me!.ppid).toBe(process.ppid);
    expect(me!.memory_rss_bytes).toBeGreaterThan(10 * 2 ** 20);
    expect(me!.threads).toBeGreaterThanOrEqual(1);
    expect(Math.abs(Date.parse(me!.started_at!) - (Date.now() - process.uptime() * 1000))).toBeLessThan(5_000);
    expect(parsed.processes.find((p) => p.pid === 1)).toBeDefined();
  });

  it('packages: bash at the version dpkg-query reports', () => {
    const bash = parsed.packages.find((p) => p.name === 'bash');
    expect(bash).toMatchObject({ version: sh('dpkg-query', ['-W', '-f=${Version}', 'bash']), manager: 'dpkg' });
    expect(parsed.packages.length).toBe(
      sh('dpkg-query', ['-W', '-f=${db:Status-Status}\\n'])
        .split('\n')
        .filter((s) => s === 'installed').length,
    );
  });

  it('ports: the port this test listens on, with this process as owner', () => {
    expect(parsed.ports).toContainEqual({
      protocol: 'tcp',
      local_address: '127.0.0.1',
      local_port: port,
      remote_address: '',
      remote_port: 0,
      state: 'LISTEN',
      pid: process.pid,
      process_name: parsed.processes.find((p) => p.pid === process.pid)!.name,
    });
    expect(parsed.ports.every((p) => !p.protocol.startsWith('tcp') || p.state === 'LISTEN')).toBe(true);
  });

  it('interfaces: loopback with 127.0.0.1', () => {
    const lo = parsed.interfaces.find((i) => i.name === 'lo');
    expect(lo).toMatchObject({
      ipv4_addresses: ['127.0.0.1'],
      mtu: Number(readFileSync('/sys/class/net/lo/mtu', 'utf8')),
    });
    expect(lo!.rx_bytes).toBeGreaterThan(0);
    expect(parsed.interfaces.map((i) => i.name).sort()).toEqual(readdirSync('/sys/class/net').sort());
  });

  it('users: every /etc/passwd line; root in its group', () => {
    const lines = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
    expect(parsed.users).toHaveLength(lines.length);
    expect(parsed.users.find((u) => u.username === 'root')).toMatchObject({
      uid: 0,
      gid: 0,
      home: '/root',
      is_system: true,
    });
    expect(parsed.users.find((u) => u.username === 'root')!.groups).toContain('root');
  });

  it('cron jobs: every job line of /etc/cron.d and /etc/crontab', () => {
    const files = [
      ...(existsSync('/etc/crontab') ? ['/etc/crontab'] : []),
      ...(existsSync('/etc/cron.d')
        ? readdirSync('/etc/cron.d')
            .filter((n) => /^[A-Za-z0-9_-]+$/.test(n))
            .map((n) => `/etc/cron.d/${n}`)
        : []),
    ];
    const jobLines = files.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#') && !/^[A-Za-z_]\w*\s*=/.test(l))
        .map((l) => ({ f, l })),
    );
    const system = parsed.cron_jobs.filter((j) => j.source === '/etc/crontab' || j.source.startsWith('/etc/cron.d/'));
    expect(system).toHaveLength(jobLines.length);
    for (const { f, l } of jobLines)
      expect(
        system.some((j) => j.source === f && l.endsWith(j.command) && l.startsWith(j.schedule.split(' ')[0]!)),
      ).toBe(true);
  });

  it('services: systemd units only with systemd as init', () => {
    if (!existsSync('/run/systemd/system')) expect(parsed.services).toEqual([]);
    else expect(parsed.services.length).toBeGreaterThan(0);
  });

  it('certificates: each trust-store certificate once, with the fingerprint node:crypto computes', () => {
    const pems = existsSync('/etc/ssl/certs') ? readdirSync('/etc/ssl/certs').filter((n) => n.endsWith('.pem')) : [];
    if (pems.length === 0) return void expect(parsed.certificates).toEqual([]);
    const fps = parsed.certificates.map((c) => c.fingerprint_sha256);
    expect(new Set(fps).size).toBe(fps.length);
    const sample = new X509Certificate(readFileSync(join('/etc/ssl/certs', pems[0]!)));
    const rec = parsed.certificates.find((c) => c.fingerprint_sha256 === sample.fingerprint256);
    expect(rec).toMatchObject({ not_after: new Date(sample.validTo).toISOString(), is_ca: sample.ca });
    // The Debian bundle holds every trusted root: each one is in the inventory.
    if (existsSync('/etc/ssl/certs/ca-certificates.crt')) {
      const bundle =
        readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8').match(
          /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g,
        ) ?? [];
      for (const pem of bundle) expect(fps).toContain(new X509Certificate(pem).fingerprint256);
    }
  });

  it('kernel modules: one per /proc/modules line (none where the kernel has no modules)', () => {
    const text = existsSync('/proc/modules') ? readFileSync('/proc/modules', 'utf8') : '';
    expect(parsed.kernel_modules).toHaveLength(text.split('\n').filter((l) => l.trim() !== '').length);
  });

  it('security items: real kernel settings', () => {
    expect(parsed.security_items).toContainEqual({
      category: 'kernel',
      key: 'kernel.randomize_va_space',
      value: readFileSync('/proc/sys/kernel/randomize_va_space', 'utf8').trim(),
    });
    expect(parsed.security_items).toContainEqual({
      category: 'kernel',
      key: 'net.ipv4.ip_forward',
      value: readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim(),
    });
    expect(parsed.security_items.some((i) => i.category === 'sshd')).toBe(existsSync('/etc/ssh/sshd_config'));
  });

  it('no GPUs, containers or firewall rules where the machine has none', () => {
    expect(parsed.gpu_devices).toEqual([]);
    if (!existsSync('/var/run/docker.sock') && !existsSync('/run/podman/podman.sock'))
      expect(parsed.containers).toEqual([]);
  });
});

describe('metrics of this machine', () => {
  let first: MetricBatchIn;
  let batch: MetricBatch;
  let elapsedMs: number;

  beforeAll(async () => {
    const collector = createLinuxCollector();
    first = await collector.metrics();
    // Burn a little CPU so this process has a share to report.
    const until = performance.now() + 150;
    while (performance.now() < until);
    const t0 = performance.now();
    batch = MetricBatch.parse(await collector.metrics());
    elapsedMs = performance.now() - t0;
  });

  it('parses with MetricBatch; the first call already has CPU (it primes itself)', () => {
    expect(MetricBatch.parse(first).samples.some((s) => s.name === 'cpu_usage_percent')).toBe(true);
    // ~20 ms when idle.
    expect(elapsedMs).toBeLessThan(1_000);
  });

  it('host CPU, load, memory, filesystem, disk and network samples', () => {
    const names = new Set(batch.samples.map((s) => s.name));
    for (const n of [
      'cpu_usage_percent',
      'load_1',
      'load_5',
      'load_15',
      'memory_used_bytes',
      'memory_available_bytes',
      'memory_usage_percent',
      'swap_used_bytes',
      'filesystem_used_bytes',
      'filesystem_size_bytes',
      'filesystem_usage_percent',
      'network_receive_bytes_total',
      'network_transmit_bytes_total',
    ]) {
      expect(names, n).toContain(n);
    }
    const one = (name: string, labels: Record<string, string> = {}) =>
      batch.samples.find((s) => s.name === name && JSON.stringify(s.labels) === JSON.stringify(labels));
    expect(one('memory_total_bytes')!.value).toBe(
      Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024,
    );
    expect(batch.samples.filter((s) => s.name === 'cpu_usage_percent' && s.labels.cpu).length).toBe(cpus().length);
    const total = one('cpu_usage_percent')!.value;
    expect(total).toBeGreaterThanOrEqual(0);
    expect(total).toBeLessThanOrEqual(100);
    const root = batch.samples.find((s) => s.name === 'filesystem_size_bytes' && s.labels.mountpoint === '/');
    expect(root).toBeDefined();
    const dfSize = Number(sh('df', ['-B1', '--output=size', '/']).split('\n')[1]);
    expect(root!.value).toBe(dfSize);
    expect(batch.samples.some((s) => s.name === 'network_receive_bytes_total' && s.labels.interface === 'lo')).toBe(
      true,
    );
    for (const dev of readdirSync('/sys/block').filter((d) => existsSync(`/sys/block/${d}/device`))) {
      expect(batch.samples.some((s) => s.name === 'disk_read_bytes_total' && s.labels.device === dev)).toBe(true);
    }
  });

  it('per-process samples for at most 20 processes, including this busy one', () => {
    const pids = new Set(batch.samples.filter((s) => s.name.startsWith('process_')).map((s) => s.labels.pid));
    expect(pids.size).toBeGreaterThan(0);
    expect(pids.size).toBeLessThanOrEqual(20);
    for (const n of ['process_cpu_usage', 'process_memory_usage', 'process_memory_rss', 'process_threads']) {
      expect(batch.samples.filter((s) => s.name === n)).toHaveLength(pids.size);
    }
    const mine = batch.samples.find((s) => s.name === 'process_cpu_usage' && s.labels.pid === String(process.pid));
    expect(mine).toBeDefined();
    expect(mine!.value).toBeGreaterThan(0);
  });

  it('no sample carries a label the server sets', () => {
    for (const s of batch.samples) for (const r of RESERVED_LABELS) expect(Object.hasOwn(s.labels, r)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Integrations: PostgreSQL and Redis of the set-up, and two nats-servers this file starts; their config is compared
// with direct queries. Whatever else runs on the machine (another checkout's broker, a TLS-only server) is not looked
// at: the collector reads a /proc that holds only these processes.

/** Pids holding a TCP listener on one of `ports` (root reads every process's descriptors). */
async function pidsListeningOn(ports: readonly number[]): Promise<number[]> {
  const inodes = new Set(
    (await readSockets('/proc', ['tcp', 'tcp6']))
      .filter((s) => s.state === 'LISTEN' && ports.includes(s.localPort))
      .map((s) => s.inode),
  );
  const pids = await listPids('/proc');
  const held = await Promise.all(pids.map((pid) => socketInodesOf('/proc', pid)));
  return pids.filter((_, i) => held[i]!.some((inode) => inodes.has(inode)));
}

const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
    s.on('error', () => resolve(false));
  });

describe('integrations of this machine', () => {
  let withConfig: IntegrationReport[];
  let statusOnly: IntegrationReport[];
  let procView: string;
  /** Lowest port first: that one runs JetStream, and gives the report its config. */
  const nats: { port: number; server: ChildProcess }[] = [];

  beforeAll(async () => {
    const ports = [await freePort()];
    while (ports.length < 2) {
      const p = await freePort();
      if (!ports.includes(p)) ports.push(p);
    }
    ports.sort((a, b) => a - b);
    procView = mkdtempSync(join(tmpdir(), 'agent-proc-'));
    const jsDir = join(procView, 'jetstream');
    for (const [i, port] of ports.entries()) {
      const args = ['-a', '127.0.0.1', '-p', String(port), ...(i === 0 ? ['-js', '-sd', jsDir] : [])];
      nats.push({ port, server: spawn('nats-server', args, { stdio: 'ignore' }) });
    }
    for (const { port } of nats) await waitFor(() => listening(port), 15_000, `the nats-server on ${port} to listen`);
    // A /proc of the known processes: links to their real entries, and the network tables of this namespace.
    symlinkSync('/proc/net', join(procView, 'net'));
    const known = [...(await pidsListeningOn([5432, 6379])), ...nats.map((n) => n.server.pid!)];
    for (const pid of known) symlinkSync(`/proc/${pid}`, join(procView, String(pid)));
    const collector = createLinuxCollector({ procRoot: procView });
    [withConfig, statusOnly] = await Promise.all([collector.integrations(true), collector.integrations(false)]).then(
      ([a, b]) => [a.map((r) => IntegrationReport.parse(r)), b.map((r) => IntegrationReport.parse(r))],
    );
  }, 60_000);

  afterAll(async () => {
    await Promise.all(nats.map((n) => stopProcess(n.server)));
    if (procView) rmSync(procView, { recursive: true, force: true });
  });

  const get = (id: string) => {
    const r = withConfig.find((x) => x.integration_id === id);
    expect(r, id).toBeDefined();
    return r!;
  };

  it('status-only reports carry no config; reports with config do', () => {
    for (const id of ['postgresql', 'redis', 'nats']) {
      expect(statusOnly.find((r) => r.integration_id === id)).toMatchObject({ status: 'ok' });
      expect(statusOnly.find((r) => r.integration_id === id)!.config).toBeUndefined();
      expect(get(id).status).toBe('ok');
    }
  });

  it('PostgreSQL settings as SHOW prints them', async () => {
    const c = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' });
    await c.connect();
    try {
      const show = async (name: string) => (await c.query<Record<string, string>>(`SHOW ${name}`)).rows[0]![name]!;
      const cfg = get('postgresql').config!;
      expect(cfg.max_connections).toEqual({
        value: Number(await show('max_connections')),
        source: 'SHOW max_connections',
        category: 'connections',
      });
      expect(cfg.server_version!.value).toBe(await show('server_version'));
      const sb = await show('shared_buffers');
      expect(`${cfg.shared_buffers!.value}${cfg.shared_buffers!.unit ?? ''}`).toBe(sb);
    } finally {
      await c.end();
    }
  });

  it('Redis maxmemory and version as the server reports them', async () => {
    const redis = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    try {
      const [, maxmemory] = (await redis.config('GET', 'maxmemory')) as [string, string];
      const cfg = get('redis').config!;
      expect(cfg.maxmemory).toEqual({
        value: Number(maxmemory),
        unit: 'bytes',
        source: 'CONFIG GET maxmemory',
        category: 'memory',
      });
      const version = /redis_version:(\S+)/.exec(await redis.info('server'))![1];
      expect(cfg.redis_version!.value).toBe(version);
    } finally {
      redis.disconnect();
    }
  });

  it('NATS: both servers found; INFO values match what a client sees', async () => {
    const r = get('nats');
    const [first, second] = nats.map((n) => `127.0.0.1:${n.port}`);
    expect(r.status_message).toContain(`${first} (nats-server `);
    expect(r.status_message).toContain(`${second} (nats-server `);
    expect(r.config!.instances!.value).toBe(`${first}, ${second}`);
    expect(r.config!.jetstream!.value).toBe(true);
    const nc = await natsConnect({ servers: first! });
    try {
      expect(r.config!.max_payload).toEqual({
        value: nc.info!.max_payload,
        unit: 'bytes',
        source: 'INFO',
        category: 'limits',
      });
      expect(r.config!.server_id!.value).toBe(nc.info!.server_id);
      expect(r.config!.jetstream!.value).toBe(nc.info!.jetstream ?? false);
    } finally {
      await nc.close();
    }
  });

  it('PostgreSQL refusing us: warning with the error, config from postgresql.conf', async () => {
    const denied = createLinuxCollector({
      procRoot: procView,
      credentials: { postgres: { database: 'no_such_database_for_agent_test' } },
    });
    const r = (await denied.integrations(true)).find((x) => x.integration_id === 'postgresql')!;
    expect(r.status).toBe('warning');
    expect(r.status_message).toMatch(/no_such_database_for_agent_test/);
    const conf = get('postgresql').config!.config_file?.value;
    if (typeof conf === 'string' && existsSync(conf)) {
      expect(r.config!.config_file).toMatchObject({ value: conf, source: 'command line' });
      expect(Object.values(r.config!).filter((v) => v.source === 'postgresql.conf').length).toBeGreaterThan(0);
    }
  });

  it('a service that accepts but never answers is an error after the 1 s deadline', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const t0 = performance.now();
      const r = await probeRedis('127.0.0.1', (silent.address() as { port: number }).port, true);
      expect(r.status).toBe('error');
      expect(r.message).toMatch(/within 1000 ms/);
      expect(performance.now() - t0).toBeLessThan(1_500);
    } finally {
      silent.close();
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Containers: no engine runs here, so a stand-in speaks the Docker Engine API on a Unix socket.

describe('containers through the engine API', () => {
  let dir: string;
  let engine: HttpServer;
  const id = 'f'.repeat(64);
  let statsCalls = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agent-engine-'));
    engine = createHttpServer((req, res) => {
      const send = (body: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const url = new URL(req.url!, 'http://docker');
      if (url.pathname === '/version')
        return send({ Version: '27.3.1', ApiVersion: '1.47', Os: 'linux', Arch: 'amd64', KernelVersion: '6.1.0' });
      if (url.pathname === '/containers/json') {
        const all = [
          {
            Id: id,
            Names: ['/web'],
            Image: 'nginx:1.27',
            State: 'running',
            Status: 'Up 2 hours',
            Created: 1_700_000_000,
            Labels: { 'com.docker.compose.service': 'web' },
          },
          {
            Id: 'e'.repeat(64),
            Names: ['/old'],
            Image: 'busybox',
            State: 'exited',
            Status: 'Exited (0) 3 days ago',
            Created: 1_600_000_000,
            Labels: null,
          },
        ];
        return send(url.searchParams.get('all') === '1' ? all : all.slice(0, 1));
      }
      if (url.pathname === `/containers/${id}/stats`) {
        statsCalls++;
        return send({
          cpu_stats: {
            cpu_usage: { total_usage: 1e9 * statsCalls },
            system_cpu_usage: 1e10 * statsCalls,
            online_cpus: 2,
          },
          precpu_stats: {},
          memory_stats: { usage: 100, limit: 1000, stats: { inactive_file: 20 } },
          networks: { eth0: { rx_bytes: 5, tx_bytes: 7 } },
          blkio_stats: { io_service_bytes_recursive: null },
        });
      }
      res.writeHead(404).end('{"message":"no such thing"}');
    });
    await new Promise<void>((r) => engine.listen(join(dir, 'docker.sock'), r));
  });
  afterAll(async () => {
    await new Promise<void>((r) => engine.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists containers, samples the running ones, reports the engine as an integration', async () => {
    const c = createLinuxCollector({ engines: [{ socketPath: join(dir, 'docker.sock'), runtime: 'docker' }] });
    const inv = InventorySnapshot.parse(await c.inventory({}));
    expect(inv.containers).toEqual([
      {
        container_id: id,
        name: 'web',
        image: 'nginx:1.27',
        state: 'running',
        status: 'Up 2 hours',
        runtime: 'docker',
        created_at: new Date(1_700_000_000_000).toISOString(),
        labels: { 'com.docker.compose.service': 'web' },
      },
      {
        container_id: 'e'.repeat(64),
        name: 'old',
        image: 'busybox',
        state: 'exited',
        status: 'Exited (0) 3 days ago',
        runtime: 'docker',
        created_at: new Date(1_600_000_000_000).toISOString(),
        labels: {},
      },
    ]);
    expect(inv.integrations.find((i) => i.integration_id === 'docker')).toMatchObject({
      status: 'ok',
      config: { version: { value: '27.3.1', source: 'GET /version', category: 'server' } },
    });

    const labels = { container_id: id, container_name: 'web' };
    const m1 = MetricBatch.parse(await c.metrics()).samples.filter((s) => s.name.startsWith('container_'));
    expect(m1).toContainEqual({ name: 'container_memory_used', value: 80, labels });
    expect(m1).toContainEqual({ name: 'container_memory_usage', value: 8, labels });
    expect(m1).toContainEqual({ name: 'container_network_transmit', value: 7, labels });
    // No precpu in one-shot stats: CPU appears from the second batch on, against the reading kept from the first.
    const m2 = MetricBatch.parse(await c.metrics()).samples.filter((s) => s.name === 'container_cpu_usage');
    expect(m2).toEqual([{ name: 'container_cpu_usage', value: 20, labels }]);
  });
});
