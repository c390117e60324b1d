import { connect } from 'node:net';
import pg from 'pg';
import type { ConfigValueIn } from './contract-inputs.ts';

/**
 * Probes of running services over their own protocols, each bounded by a deadline: Redis/Valkey (RESP), NATS (the
 * INFO line a server sends on connect) and PostgreSQL (SQL). No client libraries beyond `pg`.
 */

export type ProbeStatus = 'ok' | 'warning' | 'error';
export interface ProbeResult {
  status: ProbeStatus;
  message: string;
  config: Record<string, ConfigValueIn>;
}

export const PROBE_TIMEOUT_MS = 1_000;

/**
 * Opens a TCP connection, writes `payload` (if any) and collects bytes until `complete(buffer)` says the answer is
 * whole; rejects on refusal, an early close or the deadline. The socket is always destroyed.
 */
export function tcpExchange(
  host: string,
  port: number,
  payload: Buffer | null,
  complete: (data: Buffer) => boolean,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0);
    let settled = false;
    const socket = connect({ host, port });
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(data);
    };
    const timer = setTimeout(
      () => finish(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    socket.on('connect', () => {
      if (payload) socket.write(payload);
    });
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (complete(data)) finish(null);
    });
    socket.on('error', (e) => finish(e));
    socket.on('close', () => finish(new Error(`${host}:${port} closed the connection`)));
  });
}

// ---------------------------------------------------------------------------------------------------------------
// RESP (Redis serialization protocol, version 2)

export type RespValue = string | number | null | RespError | RespValue[];
export class RespError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

/** One RESP value at `offset`; null when the buffer does not hold it whole yet. */
export function parseResp(buf: Buffer, offset = 0): { value: RespValue; next: number } | null {
  const eol = buf.indexOf('\r\n', offset);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[offset]!);
  const head = buf.toString('utf8', offset + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '+':
      return { value: head, next: after };
    case '-':
      return { value: new RespError(head), next: after };
    case ':':
      return { value: Number(head), next: after };
    case '$': {
      const len = Number(head);
      if (len < 0) return { value: null, next: after };
      if (buf.length < after + len + 2) return null;
      return { value: buf.toString('utf8', after, after + len), next: after + len + 2 };
    }
    case '*': {
      const n = Number(head);
      if (n < 0) return { value: null, next: after };
      const items: RespValue[] = [];
      let pos = after;
      for (let i = 0; i < n; i++) {
        const item = parseResp(buf, pos);
        if (!item) return null;
        items.push(item.value);
        pos = item.next;
      }
      return { value: items, next: pos };
    }
    default:
      throw new Error(`not a RESP reply (type byte ${JSON.stringify(type)})`);
  }
}

/** Parses exactly `count` pipelined replies, or null while incomplete. */
export function parseRespReplies(buf: Buffer, count: number): RespValue[] | null {
  const out: RespValue[] = [];
  let pos = 0;
  for (let i = 0; i < count; i++) {
    const r = parseResp(buf, pos);
    if (!r) return null;
    out.push(r.value);
    pos = r.next;
  }
  return out;
}

export const respCommand = (...args: string[]): string =>
  `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`;

/** `INFO` text: `key:value` lines under `# Section` headers. */
export function parseRedisInfo(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

const REDIS_CONFIG: { key: string; category: string; unit?: string; kind: 'number' | 'bool' | 'string' }[] = [
  { key: 'maxmemory', category: 'memory', unit: 'bytes', kind: 'number' },
  { key: 'maxmemory-policy', category: 'memory', kind: 'string' },
  { key: 'maxclients', category: 'connections', kind: 'number' },
  { key: 'timeout', category: 'connections', unit: 'seconds', kind: 'number' },
  { key: 'bind', category: 'connections', kind: 'string' },
  { key: 'protected-mode', category: 'security', kind: 'bool' },
  { key: 'appendonly', category: 'persistence', kind: 'bool' },
  { key: 'save', category: 'persistence', kind: 'string' },
  { key: 'databases', category: 'server', kind: 'number' },
];
const REDIS_INFO = [
  'redis_version',
  'valkey_version',
  'redis_mode',
  'server_mode',
  'tcp_port',
  'config_file',
  'executable',
];

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * PING (status only) or the configuration: one `CONFIG GET <key>` per setting (pipelined; multi-key CONFIG GET is
 * Redis 7+ only) and `INFO server`. A password, when configured for the agent, is sent with AUTH first.
 */
export async function probeRedis(
  host: string,
  port: number,
  withConfig: boolean,
  password?: string,
): Promise<ProbeResult> {
  const commands: string[][] = [];
  if (password) commands.push(['AUTH', password]);
  if (withConfig) {
    for (const c of REDIS_CONFIG) commands.push(['CONFIG', 'GET', c.key]);
    commands.push(['INFO', 'server']);
  } else commands.push(['PING']);
  let replies: RespValue[];
  try {
    const buf = await tcpExchange(
      host,
      port,
      Buffer.from(commands.map((c) => respCommand(...c)).join('')),
      (b) => parseRespReplies(b, commands.length) !== null,
    );
    replies = parseRespReplies(buf, commands.length)!;
  } catch (e) {
    return { status: 'error', message: `${host}:${port}: ${errorText(e)}`, config: {} };
  }
  const errors = replies.filter((r): r is RespError => r instanceof RespError).map((r) => r.message);
  const config: Record<string, ConfigValueIn> = {};
  if (withConfig) {
    const offset = password ? 1 : 0;
    REDIS_CONFIG.forEach((c, i) => {
      const r = replies[offset + i];
      if (!Array.isArray(r) || typeof r[1] !== 'string') return;
      const raw = r[1];
      const value =
        c.kind === 'number' && raw !== '' && Number.isFinite(Number(raw))
          ? Number(raw)
          : c.kind === 'bool'
            ? raw === 'yes'
            : raw;
      config[c.key] = {
        value,
        ...(c.unit ? { unit: c.unit } : {}),
        source: `CONFIG GET ${c.key}`,
        category: c.category,
      };
    });
    const info = replies.at(-1);
    if (typeof info === 'string') {
      const fields = parseRedisInfo(info);
      for (const k of REDIS_INFO) {
        const v = fields[k];
        if (v === undefined || v === '') continue;
        config[k] = {
          value: k === 'tcp_port' ? Number(v) : v.slice(0, 4096),
          source: 'INFO server',
          category: 'server',
        };
      }
    }
  }
  if (errors.length > 0) return { status: 'warning', message: `${host}:${port}: ${errors[0]!.slice(0, 900)}`, config };
  return { status: 'ok', message: `${host}:${port}`, config };
}

// ---------------------------------------------------------------------------------------------------------------
// NATS

/** The `INFO {json}` line a NATS server sends first on every client connection (no authentication needed). */
export function parseNatsInfo(buf: Buffer): Record<string, unknown> | null {
  const text = buf.toString('utf8');
  const eol = text.indexOf('\r\n');
  if (eol < 0 || !text.startsWith('INFO ')) return null;
  const parsed: unknown = JSON.parse(text.slice(5, eol));
  return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
}

const NATS_CONFIG: { key: string; category: string; unit?: string }[] = [
  { key: 'server_id', category: 'server' },
  { key: 'server_name', category: 'server' },
  { key: 'version', category: 'server' },
  { key: 'go', category: 'server' },
  { key: 'proto', category: 'server' },
  { key: 'host', category: 'connections' },
  { key: 'port', category: 'connections' },
  { key: 'max_payload', category: 'limits', unit: 'bytes' },
  { key: 'headers', category: 'features' },
  { key: 'jetstream', category: 'jetstream' },
  { key: 'auth_required', category: 'security' },
  { key: 'tls_required', category: 'security' },
  { key: 'cluster', category: 'cluster' },
  { key: 'domain', category: 'jetstream' },
];

export async function probeNats(host: string, port: number, withConfig: boolean): Promise<ProbeResult> {
  let info: Record<string, unknown>;
  try {
    const buf = await tcpExchange(host, port, null, (b) => b.includes('\r\n'));
    const parsed = parseNatsInfo(buf);
    if (!parsed) return { status: 'error', message: `${host}:${port}: not a NATS INFO greeting`, config: {} };
    info = parsed;
  } catch (e) {
    return { status: 'error', message: `${host}:${port}: ${errorText(e)}`, config: {} };
  }
  const config: Record<string, ConfigValueIn> = {};
  if (withConfig) {
    for (const c of NATS_CONFIG) {
      const v = info[c.key];
      if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
        config[c.key] = {
          value: typeof v === 'string' ? v.slice(0, 4096) : v,
          ...(c.unit ? { unit: c.unit } : {}),
          source: 'INFO',
          category: c.category,
        };
      }
    }
    if (config.jetstream === undefined) config.jetstream = { value: false, source: 'INFO', category: 'jetstream' };
  }
  return {
    status: 'ok',
    message: `${host}:${port}${typeof info.version === 'string' ? ` (nats-server ${info.version})` : ''}`,
    config,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// PostgreSQL

export const PG_SETTINGS: Record<string, string> = {
  server_version: 'server',
  max_connections: 'connections',
  superuser_reserved_connections: 'connections',
  listen_addresses: 'connections',
  port: 'connections',
  shared_buffers: 'memory',
  work_mem: 'memory',
  maintenance_work_mem: 'memory',
  effective_cache_size: 'memory',
  wal_level: 'wal',
  max_wal_size: 'wal',
  min_wal_size: 'wal',
  synchronous_commit: 'wal',
  fsync: 'wal',
  max_wal_senders: 'replication',
  max_replication_slots: 'replication',
  hot_standby: 'replication',
  ssl: 'security',
  password_encryption: 'security',
  autovacuum: 'maintenance',
  log_min_duration_statement: 'logging',
  data_directory: 'files',
  config_file: 'files',
};

/** A setting as PostgreSQL prints it: `128MB` → 128 MB, `100` → 100, `on`/`off` → boolean, anything else as text. */
export function pgValue(raw: string): { value: string | number | boolean; unit?: string } {
  const m = /^(-?\d+(?:\.\d+)?)\s*(B|kB|MB|GB|TB|us|ms|s|min|h|d)?$/.exec(raw.trim());
  if (m) return m[2] ? { value: Number(m[1]), unit: m[2] } : { value: Number(m[1]) };
  if (raw === 'on' || raw === 'off') return { value: raw === 'on' };
  return { value: raw.slice(0, 4096) };
}

/** postgresql.conf: `name = value # comment` (single-quoted values may hold `#`); `include` directives not followed. */
export function parsePostgresqlConf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=?\s*('(?:[^'\\]|\\.|'')*'|[^\s#]+)/.exec(raw);
    if (!m || raw.trim().startsWith('#')) continue;
    const v = m[2]!;
    out[m[1]!.toLowerCase()] = v.startsWith("'") ? v.slice(1, -1).replace(/''/g, "'") : v;
  }
  return out;
}

export interface PgTarget {
  host: string;
  port: number;
  user: string;
  password?: string;
  database: string;
}

const PG_CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENOENT', 'ETIMEDOUT', 'ECONNRESET']);

/**
 * `SELECT 1` (status) or the settings above through `current_setting` (what SHOW prints). A refused or timed-out
 * connection is `error`; a server that answers but refuses us (authentication, permissions) is `warning`, and the
 * caller then falls back to the configuration file.
 */
export async function probePostgres(t: PgTarget, withConfig: boolean): Promise<ProbeResult> {
  const client = new pg.Client({
    host: t.host,
    port: t.port,
    user: t.user,
    password: t.password,
    database: t.database,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
    application_name: 'svc-agent',
  });
  client.on('error', () => undefined);
  const where = t.host.startsWith('/') ? `${t.host}/.s.PGSQL.${t.port}` : `${t.host}:${t.port}`;
  try {
    await client.connect();
    const config: Record<string, ConfigValueIn> = {};
    if (withConfig) {
      const res = await client.query<{ name: string; value: string }>(
        // pg_settings lists only what this server has; server_version is GUC-visible too.
        'SELECT name, current_setting(name) AS value FROM pg_settings WHERE name = ANY($1::text[])',
        [Object.keys(PG_SETTINGS)],
      );
      for (const row of res.rows)
        config[row.name] = {
          ...pgValue(row.value),
          source: `SHOW ${row.name}`,
          category: PG_SETTINGS[row.name] ?? 'server',
        };
    } else await client.query('SELECT 1');
    const version =
      typeof config.server_version?.value === 'string' ? ` (PostgreSQL ${config.server_version.value})` : '';
    return { status: 'ok', message: `${where}${version}`, config };
  } catch (e) {
    const code = (e as { code?: string }).code;
    const reached = !(code && PG_CONNECT_FAILURES.has(code)) && !/timeout|terminated unexpectedly/i.test(errorText(e));
    return { status: reached ? 'warning' : 'error', message: `${where}: ${errorText(e)}`.slice(0, 1024), config: {} };
  } finally {
    await client.end().catch(() => undefined);
  }
}
