import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  ClickHouseError,
  createClient,
  type ClickHouseClient,
  type ClickHouseClientConfigOptions,
  type ClickHouseSettings,
} from '@clickhouse/client';
import type { Session } from 'chdb';
import type { Config } from '../../../platform/config.ts';

/**
 * The analytics store (usage and time-tracking records for invoicing). Two engines run the SAME SQL:
 * a ClickHouse server through @clickhouse/client when SVC_CLICKHOUSE_URL is set, otherwise chDB in-process with its
 * data under SVC_ANALYTICS_PATH. This module is the only place that knows which one is in use.
 *
 * SQL conventions (hold for both engines):
 * - parameters use ClickHouse placeholders, `{name:Type}`, bound server-side (never interpolated);
 *   a `Date` parameter is sent as UTC `YYYY-MM-DD hh:mm:ss[.mmm]`, so it binds to DateTime and DateTime64;
 * - one statement per call (the HTTP interface refuses multi-statements); no FORMAT clause (results are JSONEachRow);
 * - results come back as JSON: Decimal and (U)Int64/128/256 values are STRINGS (exact; parse them with a decimal
 *   library), DateTime is `YYYY-MM-DD hh:mm:ss` in UTC;
 * - inserted rows are JSON objects; DateTime columns accept ISO strings/`Date` (best-effort parsing), bigint is
 *   sent as a string.
 */
export interface AnalyticsStore {
  readonly kind: 'chdb' | 'clickhouse';
  /** A SELECT (or anything returning rows); rows as parsed JSONEachRow objects. */
  query<T = Record<string, unknown>>(sql: string, params?: AnalyticsParams): Promise<T[]>;
  /** DDL and other statements without a result. */
  command(sql: string, params?: AnalyticsParams): Promise<void>;
  /** Inserts JSON rows into `table` (optionally `db.table`); no-op for an empty array. */
  insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void>;
  /** Throws when the engine cannot run a query. */
  ping(): Promise<void>;
  /** Releases this handle (chDB: the shared session closes when its last handle does). Idempotent. */
  close(): Promise<void>;
}

export type AnalyticsParams = Record<string, unknown>;

/** An engine error with ClickHouse's numeric code and symbolic type (e.g. 60 / UNKNOWN_TABLE) when known. */
export class AnalyticsError extends Error {
  override name = 'AnalyticsError';
  readonly code: number | undefined;
  readonly type: string | undefined;
  constructor(message: string, code: number | undefined, type: string | undefined, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.type = type;
  }
}

/**
 * Session settings both engines run with, so results look the same whichever is in use. The chDB defaults differ
 * from a server's (chDB prints 64-bit integers as JSON numbers, losing precision above 2^53).
 */
const ENGINE_SETTINGS = {
  output_format_json_quote_64bit_integers: 1,
  output_format_json_quote_decimals: 1,
  date_time_input_format: 'best_effort',
  session_timezone: 'UTC',
} as const satisfies ClickHouseSettings;

const IDENTIFIER = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?$/;

export async function openAnalytics(
  config: Pick<Config, 'SVC_CLICKHOUSE_URL' | 'SVC_ANALYTICS_PATH'>,
): Promise<AnalyticsStore> {
  if (config.SVC_CLICKHOUSE_URL) return openClickHouseAnalytics({ url: config.SVC_CLICKHOUSE_URL });
  return openChdbAnalytics(config.SVC_ANALYTICS_PATH);
}

// ---------------------------------------------------------------------------------------------------------------
// ClickHouse server

export interface ClickHouseAnalyticsOptions {
  /** http(s)://user:password@host:8123/database */
  url?: string;
  /** A custom @clickhouse/client Connection (e.g. chdb/connection in tests); replaces the HTTP transport. */
  connection?: ClickHouseClientConfigOptions['connection'];
  requestTimeoutMs?: number;
}

export async function openClickHouseAnalytics(opts: ClickHouseAnalyticsOptions): Promise<AnalyticsStore> {
  const client = createClient({
    ...(opts.url ? { url: opts.url } : {}),
    ...(opts.connection ? { connection: opts.connection } : {}),
    application: 'svc',
    request_timeout: opts.requestTimeoutMs ?? 30_000,
    max_open_connections: 10,
    clickhouse_settings: { ...ENGINE_SETTINGS },
    json: { parse: JSON.parse, stringify: stringifyRow },
  });
  return new ClickHouseAnalytics(client);
}

class ClickHouseAnalytics implements AnalyticsStore {
  readonly kind = 'clickhouse' as const;
  private closed = false;
  private readonly client: ClickHouseClient;
  constructor(client: ClickHouseClient) {
    this.client = client;
  }

  async query<T = Record<string, unknown>>(sql: string, params?: AnalyticsParams): Promise<T[]> {
    try {
      const rs = await this.client.query({ query: sql, query_params: normalizeParams(params), format: 'JSONEachRow' });
      return await rs.json<T>();
    } catch (err) {
      throw fromClickHouse(err);
    }
  }

  async command(sql: string, params?: AnalyticsParams): Promise<void> {
    try {
      await this.client.command({ query: sql, query_params: normalizeParams(params) });
    } catch (err) {
      throw fromClickHouse(err);
    }
  }

  async insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
    checkTable(table);
    if (rows.length === 0) return;
    try {
      await this.client.insert({ table, values: [...rows], format: 'JSONEachRow' });
    } catch (err) {
      throw fromClickHouse(err);
    }
  }

  async ping(): Promise<void> {
    // `select: true` runs a query, so it also checks credentials and the database (the bare /ping does not).
    const res = await this.client.ping({ select: true });
    if (!res.success) throw fromClickHouse(res.error);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.client.close();
  }
}

function fromClickHouse(err: unknown): Error {
  if (!(err instanceof Error)) return new Error(String(err));
  // Duck-typed as well as instanceof: @clickhouse/client embeds its own copy of the common code, so a ClickHouseError
  // made by the separate @clickhouse/client-common package (as a custom Connection such as chdb's raises) fails it.
  const { code, type } = err as Error & { code?: unknown; type?: unknown };
  if (err instanceof ClickHouseError || (typeof code === 'string' && /^\d+$/.test(code))) {
    return new AnalyticsError(err.message, Number(code), typeof type === 'string' ? type : undefined, { cause: err });
  }
  return err;
}

// ---------------------------------------------------------------------------------------------------------------
// chDB (in-process)

/**
 * libchdb binds ONE data directory per process, and a directory's session should be shared, not reopened by every
 * part of the process (gateway, actors, migrations). So: one session per path, reference-counted; the last close
 * really closes it. Opening a different path while one is open is refused with a clear error.
 */
interface SessionEntry {
  refs: number;
  ready: Promise<Session>;
}
const sessions = new Map<string, SessionEntry>();

async function acquireSession(path: string): Promise<Session> {
  let entry = sessions.get(path);
  if (!entry) {
    const other = sessions.keys().next();
    if (!other.done) {
      throw new AnalyticsError(
        `chDB can open one data directory per process: ${other.value} is open, ${path} was requested`,
        undefined,
        undefined,
      );
    }
    const created: SessionEntry = {
      refs: 0,
      ready: (async () => {
        // Loaded here, not at the top: libchdb (566 MB) costs a process ~150 MB of RSS once loaded, and only the
        // process that runs the invoice domain without SVC_CLICKHOUSE_URL uses it.
        const { Session, drainPending } = await import('chdb');
        // A session closed at another path may still be finishing native work; a new one is refused until it is done.
        await drainPending();
        await mkdir(path, { recursive: true });
        const args = Object.entries(ENGINE_SETTINGS).map(([k, v]) => `--${k}=${v}`);
        try {
          return new Session(path, { connectionArgs: args });
        } catch (err) {
          throw fromChdb(err);
        }
      })(),
    };
    created.ready.catch(() => {
      if (sessions.get(path) === created) sessions.delete(path);
    });
    sessions.set(path, created);
    entry = created;
  }
  entry.refs += 1;
  try {
    return await entry.ready;
  } catch (err) {
    entry.refs -= 1;
    throw err;
  }
}

function releaseSession(path: string, session: Session): void {
  const entry = sessions.get(path);
  if (!entry) return;
  entry.refs -= 1;
  if (entry.refs > 0) return;
  sessions.delete(path);
  session.close();
}

export async function openChdbAnalytics(dataPath: string): Promise<AnalyticsStore> {
  const path = resolve(dataPath);
  const session = await acquireSession(path);
  return new ChdbAnalytics(path, session);
}

class ChdbAnalytics implements AnalyticsStore {
  readonly kind = 'chdb' as const;
  private closed = false;
  // Closing a chDB connection under a running operation aborts the engine for the whole process: track them.
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly path: string;
  private readonly session: Session;
  constructor(path: string, session: Session) {
    this.path = path;
    this.session = session;
  }

  async query<T = Record<string, unknown>>(sql: string, params?: AnalyticsParams): Promise<T[]> {
    const text = await this.run(sql, params, 'JSONEachRow');
    const rows: T[] = [];
    for (const line of text.split('\n')) if (line.trim() !== '') rows.push(JSON.parse(line) as T);
    return rows;
  }

  async command(sql: string, params?: AnalyticsParams): Promise<void> {
    await this.run(sql, params, 'JSONEachRow');
  }

  async insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void> {
    checkTable(table);
    if (rows.length === 0) return;
    this.assertOpen();
    // JSONEachRow through the engine's own parser: the same input format the server path sends.
    const payload = rows.map((r) => stringifyRow(r)).join('\n');
    await this.track(this.session.insert({ table, values: payload, format: 'JSONEachRow' }));
  }

  async ping(): Promise<void> {
    await this.run('SELECT 1', undefined, 'CSV');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.inflight]);
    releaseSession(this.path, this.session);
  }

  private async run(sql: string, params: AnalyticsParams | undefined, format: string): Promise<string> {
    this.assertOpen();
    const bound = normalizeParams(params);
    const result =
      bound && Object.keys(bound).length > 0
        ? this.session.queryBindAsync(sql, bound, { format })
        : this.session.queryAsync(sql, { format });
    return (await this.track(result)).text();
  }

  private async track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    try {
      return await p;
    } catch (err) {
      throw fromChdb(err);
    } finally {
      this.inflight.delete(p);
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new AnalyticsError('analytics store is closed', undefined, undefined);
  }
}

function fromChdb(err: unknown): Error {
  if (!(err instanceof Error)) return new Error(String(err));
  // chDB's message reads like the server's: "Code: 60. DB::Exception: ... (UNKNOWN_TABLE)"; `clickhouseCode` is not
  // always set, so the message is the fallback.
  const native = (err as Error & { clickhouseCode?: unknown }).clickhouseCode;
  const code = typeof native === 'number' ? native : Number(/Code: (\d+)\./.exec(err.message)?.[1] ?? Number.NaN);
  const type = /\(([A-Z][A-Z0-9_]+)\)\s*$/.exec(err.message)?.[1];
  // Another process holds the directory: say who may hold it, not only that the lock failed.
  const hint = /Cannot lock file/.test(err.message)
    ? ' (another process has this chDB directory open: only the process running the invoice domain opens it; several invoice instances need a ClickHouse server, SVC_CLICKHOUSE_URL)'
    : '';
  return new AnalyticsError(err.message + hint, Number.isFinite(code) ? code : undefined, type, { cause: err });
}

// ---------------------------------------------------------------------------------------------------------------
// shared helpers

function checkTable(table: string): void {
  // Identifiers cannot be bound as parameters; accept only plain (optionally db-qualified) names.
  if (!IDENTIFIER.test(table))
    throw new AnalyticsError(`invalid table name ${JSON.stringify(table)}`, undefined, undefined);
}

/** bigint has no JSON form: send it as a string, which ClickHouse parses into any integer or Decimal column. */
function stringifyRow(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

function normalizeParams(params: AnalyticsParams | undefined): Record<string, unknown> | undefined {
  if (!params) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) out[k] = normalizeParam(v);
  return out;
}

/**
 * The two clients serialize a `Date` differently (unix seconds vs. a UTC string without milliseconds), so dates are
 * normalized here to one UTC text form that parses as DateTime (whole seconds) and DateTime64 alike.
 */
function normalizeParam(v: unknown): unknown {
  if (v instanceof Date) return formatUtc(v);
  if (Array.isArray(v)) return v.map(normalizeParam);
  return v;
}

function formatUtc(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new AnalyticsError('invalid Date parameter', undefined, undefined);
  const iso = d.toISOString(); // YYYY-MM-DDThh:mm:ss.sssZ
  const base = `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
  return d.getUTCMilliseconds() === 0 ? base : `${base}.${iso.slice(20, 23)}`;
}
