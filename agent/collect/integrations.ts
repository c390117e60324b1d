import { join } from 'node:path';
import type { ConfigValueIn, IntegrationIn } from './contract-inputs.ts';
import { engineGet, findEngine, type Engine } from './containers.ts';
import { listPids, procPath, readText, type Roots } from './read.ts';
import { readSockets, socketInodesOf, type SocketEntry } from './ports.ts';
import {
  parsePostgresqlConf,
  PG_SETTINGS,
  pgValue,
  probeNats,
  probePostgres,
  probeRedis,
  PROBE_TIMEOUT_MS,
  type ProbeResult,
} from './probes.ts';

/** Credentials the agent may be given for services that need them (none by default: PostgreSQL as `postgres`). */
export interface IntegrationCredentials {
  postgres?: { user?: string; password?: string; database?: string };
  redis?: { password?: string };
}

/** A running service process, found by its kernel name (comm, at most 15 characters) and, where that is generic, argv. */
interface Kind {
  id: string;
  name: string;
  comm: (comm: string) => boolean;
  argv?: (argv: string[]) => boolean;
}

/** Integration ids follow the fleet catalogue (migrations: postgresql, mysql, redis, nats, nginx, docker, ...). */
const KINDS: Kind[] = [
  { id: 'postgresql', name: 'PostgreSQL', comm: (c) => c === 'postgres' || c === 'postmaster' },
  { id: 'redis', name: 'Redis', comm: (c) => c === 'redis-server' || c === 'valkey-server' },
  { id: 'nats', name: 'NATS', comm: (c) => c === 'nats-server' },
  { id: 'mysql', name: 'MySQL', comm: (c) => c === 'mysqld' || c === 'mariadbd' },
  { id: 'nginx', name: 'nginx', comm: (c) => c === 'nginx' },
  { id: 'clickhouse', name: 'ClickHouse', comm: (c) => c.startsWith('clickhouse-serv') || c === 'clickhouse' },
  {
    id: 'victoriametrics',
    name: 'VictoriaMetrics',
    comm: (c) => /^(victoria-metric|vmstorage|vmselect|vminsert)/.test(c),
  },
  { id: 'rabbitmq', name: 'RabbitMQ', comm: (c) => c === 'beam.smp', argv: (a) => a.some((x) => x.includes('rabbit')) },
  { id: 'mosquitto', name: 'Mosquitto', comm: (c) => c === 'mosquitto' },
];

interface Found {
  kind: Kind;
  pids: number[];
  argv: string[][];
  /** TCP listeners held by those processes, lowest port first, one per port (IPv4 preferred). */
  listeners: { host: string; port: number }[];
}

/** Where to connect for a listener: a wildcard bind is reached on loopback. */
const dialHost = (s: SocketEntry): string =>
  s.localAddress === '0.0.0.0'
    ? '127.0.0.1'
    : s.localAddress === '::'
      ? '::1'
      : s.localAddress.replace(/^::ffff:(?=\d+\.)/, '');

/** Running service processes by kind, with the TCP ports they listen on (from /proc/[pid]/fd socket inodes). */
export async function detectServices(proc: string): Promise<Found[]> {
  const pids = await listPids(proc);
  const comms = await Promise.all(pids.map((pid) => readText(procPath(proc, pid, 'comm'))));
  const byKind = new Map<string, { kind: Kind; pids: number[]; argv: string[][] }>();
  await Promise.all(
    pids.map(async (pid, i) => {
      const comm = comms[i]?.trim();
      if (!comm) return;
      const candidates = KINDS.filter((k) => k.comm(comm));
      if (candidates.length === 0) return;
      const argv = ((await readText(procPath(proc, pid, 'cmdline'))) ?? '').split('\0').filter((a) => a !== '');
      const kind = candidates.find((k) => !k.argv || k.argv(argv));
      if (!kind) return;
      const entry = byKind.get(kind.id) ?? { kind, pids: [], argv: [] };
      entry.pids.push(pid);
      entry.argv.push(argv);
      byKind.set(kind.id, entry);
    }),
  );
  if (byKind.size === 0) return [];
  const listening = new Map(
    (await readSockets(proc, ['tcp', 'tcp6'])).filter((s) => s.state === 'LISTEN').map((s) => [s.inode, s]),
  );
  const out: Found[] = [];
  for (const entry of byKind.values()) {
    const inodes = (await Promise.all(entry.pids.map((pid) => socketInodesOf(proc, pid)))).flat();
    const byPort = new Map<number, SocketEntry>();
    for (const inode of inodes) {
      const s = listening.get(inode);
      if (!s) continue;
      const had = byPort.get(s.localPort);
      if (!had || (had.protocol === 'tcp6' && s.protocol === 'tcp')) byPort.set(s.localPort, s);
    }
    const listeners = [...byPort.values()]
      .sort((a, b) => a.localPort - b.localPort)
      .map((s) => ({ host: dialHost(s), port: s.localPort }));
    out.push({ ...entry, listeners });
  }
  // Code-point order: ids are ASCII, and localeCompare would load ICU's collation data (megabytes of resident memory).
  return out.sort((a, b) => (a.kind.id < b.kind.id ? -1 : a.kind.id > b.kind.id ? 1 : 0));
}

/** Resolves to the probe's result, or an error result when it overruns its deadline. */
async function bounded(p: Promise<ProbeResult>, what: string, ms = PROBE_TIMEOUT_MS + 250): Promise<ProbeResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<ProbeResult>((resolve) => {
    timer = setTimeout(
      () => resolve({ status: 'error', message: `${what}: no answer within ${ms} ms`, config: {} }),
      ms,
    );
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const RANK = { ok: 0, warning: 1, error: 2 } as const;

/** Probes every instance (listener) of a kind; the first (lowest port) gives the config, the worst gives the status. */
async function probeInstances(
  found: Found,
  probe: (host: string, port: number) => Promise<ProbeResult>,
  what: string,
): Promise<ProbeResult> {
  if (found.listeners.length === 0)
    return { status: 'error', message: `${what} runs (pid ${found.pids[0]}) but listens on no TCP port`, config: {} };
  const results = await Promise.all(found.listeners.map((l) => bounded(probe(l.host, l.port), `${l.host}:${l.port}`)));
  const worst = results.reduce((a, b) => (RANK[b.status] > RANK[a.status] ? b : a));
  const config = { ...results[0]!.config };
  if (found.listeners.length > 1 && Object.keys(config).length > 0) {
    config.instances = {
      value: found.listeners.map((l) => `${l.host}:${l.port}`).join(', '),
      source: 'listening sockets',
      category: 'server',
    };
  }
  const message =
    found.listeners.length > 1
      ? `${found.listeners.length} instances: ${results.map((r) => r.message).join('; ')}`
      : worst.message;
  return { status: worst.status, message: message.slice(0, 1024), config };
}

/** postgresql.conf of a running postmaster: `-c config_file=...`, else `<data directory>/postgresql.conf`. */
function postgresConfPath(argvs: string[][]): string | null {
  for (const argv of argvs) {
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]!;
      const m =
        /^(?:--)?config_file=(.+)$/.exec(a) ?? (a === '-c' ? /^config_file=(.+)$/.exec(argv[i + 1] ?? '') : null);
      if (m) return m[1]!;
    }
    const d = argv.indexOf('-D');
    if (d >= 0 && argv[d + 1]) return join(argv[d + 1]!, 'postgresql.conf');
  }
  return null;
}

async function postgresFromFile(argvs: string[][]): Promise<Record<string, ConfigValueIn>> {
  const path = postgresConfPath(argvs);
  const text = path ? await readText(path) : null;
  if (!path || text === null) return {};
  const conf = parsePostgresqlConf(text);
  const out: Record<string, ConfigValueIn> = {
    config_file: { value: path, source: 'command line', category: 'files' },
  };
  for (const [key, category] of Object.entries(PG_SETTINGS)) {
    const v = conf[key];
    if (v !== undefined) out[key] = { ...pgValue(v), source: 'postgresql.conf', category };
  }
  return out;
}

async function postgres(
  found: Found,
  withConfig: boolean,
  creds: IntegrationCredentials['postgres'] = {},
): Promise<ProbeResult> {
  // No TCP listener: the postmaster may serve the Unix socket only (Debian's default directory).
  const targets = found.listeners.length > 0 ? found.listeners : [{ host: '/var/run/postgresql', port: 5432 }];
  const primary = targets[0]!;
  const r = await bounded(
    probePostgres(
      {
        host: primary.host,
        port: primary.port,
        user: creds.user ?? 'postgres',
        password: creds.password,
        database: creds.database ?? 'postgres',
      },
      withConfig,
    ),
    `${primary.host}:${primary.port}`,
  );
  // Unreachable or refused: what the configuration file says is still worth showing.
  if (r.status !== 'ok' && withConfig) return { ...r, config: await postgresFromFile(found.argv) };
  return r;
}

async function docker(engine: Engine, withConfig: boolean): Promise<ProbeResult> {
  try {
    const v = (await engineGet(engine.socketPath, '/version', PROBE_TIMEOUT_MS)) as Record<string, unknown>;
    const config: Record<string, ConfigValueIn> = {};
    if (withConfig) {
      for (const [key, source] of [
        ['Version', 'version'],
        ['ApiVersion', 'api_version'],
        ['Os', 'os'],
        ['Arch', 'arch'],
        ['KernelVersion', 'kernel_version'],
      ] as const) {
        if (typeof v[key] === 'string')
          config[source] = { value: (v[key] as string).slice(0, 4096), source: 'GET /version', category: 'server' };
      }
    }
    return {
      status: 'ok',
      message: `${engine.socketPath}${typeof v.Version === 'string' ? ` (${engine.runtime} ${v.Version})` : ''}`,
      config,
    };
  } catch (e) {
    return {
      status: 'error',
      message: `${engine.socketPath}: ${e instanceof Error ? e.message : String(e)}`,
      config: {},
    };
  }
}

/**
 * Services found by process scan, with a status (and, when `withConfig`, the running service's configuration):
 * PostgreSQL (SQL), Redis/Valkey (RESP), NATS (INFO greeting) and Docker (engine API) are probed over their own
 * protocols; the others (MySQL/MariaDB, nginx, ClickHouse, VictoriaMetrics, RabbitMQ, Mosquitto) are reported from
 * the process table only — `ok` when they hold a listening TCP socket — because a bare connect-and-close would write
 * an aborted-connection line into their logs every heartbeat (and an interrupted handshake can count against MySQL's max_connect_errors).
 */
export async function collectIntegrations(
  roots: Roots,
  withConfig: boolean,
  creds: IntegrationCredentials = {},
  engines?: Engine[],
): Promise<IntegrationIn[]> {
  const found = await detectServices(roots.proc);
  const reports = await Promise.all(
    found.map(async (f): Promise<IntegrationIn> => {
      let r: ProbeResult;
      let collector: string;
      switch (f.kind.id) {
        case 'postgresql':
          [r, collector] = [await postgres(f, withConfig, creds.postgres), 'postgresql-sql'];
          break;
        case 'redis':
          [r, collector] = [
            await probeInstances(f, (h, p) => probeRedis(h, p, withConfig, creds.redis?.password), 'redis'),
            'redis-resp',
          ];
          break;
        case 'nats':
          [r, collector] = [await probeInstances(f, (h, p) => probeNats(h, p, withConfig), 'nats-server'), 'nats-info'];
          break;
        default:
          collector = 'process-scan';
          r =
            f.listeners.length > 0
              ? {
                  status: 'ok',
                  message: `${f.kind.name} (pid ${f.pids[0]}) listening on ${f.listeners.map((l) => `${l.host}:${l.port}`).join(', ')}`,
                  config: {},
                }
              : { status: 'ok', message: `${f.kind.name} (pid ${f.pids[0]}) running; no TCP listener`, config: {} };
          if (withConfig && f.listeners.length > 0)
            r.config.listen = {
              value: f.listeners.map((l) => `${l.host}:${l.port}`).join(', '),
              source: 'listening sockets',
              category: 'connections',
            };
      }
      return report(f.kind.id, collector, r, withConfig);
    }),
  );
  const engine = findEngine(engines);
  if (engine) reports.push(report('docker', 'docker-api', await docker(engine, withConfig), withConfig));
  return reports.slice(0, 100);
}

function report(id: string, collector: string, r: ProbeResult, withConfig: boolean): IntegrationIn {
  const base: IntegrationIn = {
    integration_id: id,
    collector_name: collector,
    status: r.status,
    status_message: r.message.slice(0, 1024),
    enabled: true,
  };
  return withConfig ? { ...base, config: r.config } : base;
}
