import { createHash } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';

/**
 * Small key-value cache: lockout counters, rate limits, MFA challenges, access cache. Valkey/Redis when
 * SVC_VALKEY_URL is set (shared by every gateway/actor instance); otherwise an in-process map that is only correct
 * for a single instance. Every operation that must be atomic across instances is one Redis command or one Lua script.
 */
export interface KvStore {
  readonly kind: 'valkey' | 'memory';
  get(key: string): Promise<string | null>;
  /** Returns false only when `nx` is set and the key already exists. */
  set(key: string, value: string, opts?: KvSetOptions): Promise<boolean>;
  /** Number of keys that existed. */
  del(...keys: string[]): Promise<number>;
  /** Atomically reads and deletes: of concurrent callers exactly one gets the value (single-use tokens). */
  getDel(key: string): Promise<string | null>;
  /** Atomic increment; `ttlMs` is applied when the counter is created (or has no expiry), never extended. */
  incr(key: string, ttlMs?: number): Promise<number>;
  /** Remaining time to live in ms; -2 when the key does not exist, -1 when it has no expiry. */
  ttlMs(key: string): Promise<number>;
  /**
   * Fixed-window counter: counts `hits` (default 1) in the current window; count = the window's total after them,
   * resetMs = ms until the window ends.
   */
  hitWindow(key: string, windowMs: number, hits?: number): Promise<{ count: number; resetMs: number }>;
  /**
   * Token bucket (refilled at `ratePerSecond`, holding at most `burst`): reserves one token and tells how long the
   * caller must wait before using it (0 = at once). Reservations queue up in order, so callers never race each other
   * for a refill. When the wait would exceed `maxWaitMs` nothing is reserved and `granted` is false.
   */
  reserveToken(
    key: string,
    ratePerSecond: number,
    burst: number,
    maxWaitMs: number,
  ): Promise<{ granted: boolean; waitMs: number }>;
  /** Throws when the backend is unreachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** What a reader of cached values needs of a store: the shared store itself, or a near cache in front of it (kv-near-cache.ts). */
export type KvReader = Pick<KvStore, 'get'> & {
  /** A near cache: resolves once the changes announced so far are applied (kv-near-cache.ts). */
  settled?(): Promise<void>;
};

export interface KvSetOptions {
  ttlMs?: number;
  nx?: boolean;
}

export interface KvOptions {
  /** Prepended to every key, so several systems (or test runs) can share one server. Default `svc:`. */
  keyPrefix?: string;
}

export const DEFAULT_KEY_PREFIX = 'svc:';

export async function openKv(
  config: Pick<Config, 'SVC_VALKEY_URL'>,
  log: Logger,
  opts: KvOptions = {},
): Promise<KvStore> {
  const prefix = opts.keyPrefix ?? DEFAULT_KEY_PREFIX;
  if (config.SVC_VALKEY_URL) return openValkeyKv(config.SVC_VALKEY_URL, log, prefix);
  log.warn(
    'SVC_VALKEY_URL is not set: lockouts, rate limits and MFA challenges are kept in-process (correct for a single instance only)',
  );
  return new MemoryKv(prefix);
}

// ---------------------------------------------------------------------------------------------------------------
// Valkey / Redis

// INCR then set the expiry only if the key has none: the first hit creates the window, later hits never extend it,
// and a counter that somehow lost its expiry is repaired instead of locking someone out forever.
const INCR_LUA = `
local n = redis.call('INCR', KEYS[1])
local ttl = tonumber(ARGV[1])
if ttl > 0 and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return n`;

const HIT_WINDOW_LUA = `
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

// The server's clock (TIME) is the only clock: every instance reserves against the same notion of now. Tokens may go
// negative: that is the queue of reservations already handed out, each waiting its turn.
const RESERVE_TOKEN_LUA = `
if redis.replicate_commands then pcall(redis.replicate_commands) end
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local maxWait = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local st = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(st[1])
local ts = tonumber(st[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
  ts = now
end
local after = tokens - 1
local wait = 0
if after < 0 then wait = math.ceil(-after * 1000 / rate) end
if wait > maxWait then return {0, wait} end
redis.call('HSET', KEYS[1], 'tokens', tostring(after), 'ts', tostring(ts))
redis.call('PEXPIRE', KEYS[1], wait + math.ceil(burst * 1000 / rate) + 1000)
return {1, wait}`;

class Script {
  readonly sha: string;
  readonly source: string;
  constructor(source: string) {
    this.source = source;
    this.sha = createHash('sha1').update(source).digest('hex');
  }
}
const INCR = new Script(INCR_LUA);
const HIT_WINDOW = new Script(HIT_WINDOW_LUA);
const RESERVE_TOKEN = new Script(RESERVE_TOKEN_LUA);

export interface ValkeyOptions {
  /** How long opening waits for the first connection before going on without it. Default 3 s. */
  readyTimeoutMs?: number;
  /** A command the server accepted but did not answer fails after this long. Default 2 s. */
  commandTimeoutMs?: number;
}

/**
 * Opens the shared store. A cache must never hold a request up: while the connection is down, commands fail at
 * once instead of queueing until a reconnect (callers treat that as a miss, or let the request through), and a
 * server that accepts but does not answer fails a command after `commandTimeoutMs`. Opening waits (bounded) for the
 * first connection, so a healthy start never sees a "not connected" failure; a server that is down at start-up is
 * logged, and used as soon as it answers.
 */
export async function openValkeyKv(
  url: string,
  log: Logger,
  keyPrefix = DEFAULT_KEY_PREFIX,
  opts: ValkeyOptions = {},
): Promise<KvStore> {
  const redis = valkeyConnection(url, log, { commandTimeout: opts.commandTimeoutMs ?? 2_000 });
  const where = redactCredentials(url);
  const up = await new Promise<boolean>((resolve) => {
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      resolve(ok);
    };
    const onReady = (): void => done(true);
    const onError = (): void => done(false);
    const timer = setTimeout(() => done(false), opts.readyTimeoutMs ?? 3_000);
    redis.once('ready', onReady);
    redis.once('error', onError);
  });
  if (!up) {
    log.warn(
      { url: where },
      'valkey is not reachable; going on without it until it answers (rate limits let requests through, access is resolved without the cache, lockout and MFA challenges fail)',
    );
  }
  return new ValkeyKv(redis, keyPrefix);
}

/**
 * A connection to Valkey with the settings every store of the project uses: no offline queue (a command fails at once
 * while the connection is down), a 2 s command timeout, one retry of a command written as the connection dropped,
 * reconnects backing off to 2 s; its errors logged once per outage (`what` names it in the log). `options` override.
 */
export function valkeyConnection(url: string, log: Logger, options: RedisOptions = {}, what = 'valkey'): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: 2_000,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    ...options,
  });
  const where = redactCredentials(url);
  // Without a listener ioredis prints every connection error; route them into the log, once per outage.
  let failing: string | undefined;
  redis.on('error', (err: Error) => {
    if (failing === err.message) return;
    failing = err.message;
    log.warn({ err: err.message, url: where }, `${what} connection error`);
  });
  redis.on('ready', () => {
    if (failing !== undefined) log.info({ url: where }, `${what} connected`);
    failing = undefined;
  });
  return redis;
}

/** The URL with any password replaced, for logs and error messages. */
export function redactCredentials(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

class ValkeyKv implements KvStore {
  readonly kind = 'valkey' as const;
  private readonly redis: Redis;
  private readonly prefix: string;
  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
  }

  private k(key: string): string {
    return this.prefix + key;
  }

  async get(key: string): Promise<string | null> {
    return this.redis.get(this.k(key));
  }

  async set(key: string, value: string, opts: KvSetOptions = {}): Promise<boolean> {
    const k = this.k(key);
    const ttl = opts.ttlMs !== undefined ? positiveMs(opts.ttlMs) : undefined;
    let res: string | null;
    if (ttl !== undefined && opts.nx) res = await this.redis.set(k, value, 'PX', ttl, 'NX');
    else if (ttl !== undefined) res = await this.redis.set(k, value, 'PX', ttl);
    else if (opts.nx) res = await this.redis.set(k, value, 'NX');
    else res = await this.redis.set(k, value);
    return res === 'OK';
  }

  async del(...keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return this.redis.del(...keys.map((key) => this.k(key)));
  }

  async getDel(key: string): Promise<string | null> {
    return this.redis.getdel(this.k(key));
  }

  async incr(key: string, ttlMs?: number): Promise<number> {
    const ttl = ttlMs === undefined ? 0 : positiveMs(ttlMs);
    return Number(await this.eval(INCR, this.k(key), String(ttl)));
  }

  async ttlMs(key: string): Promise<number> {
    return this.redis.pttl(this.k(key));
  }

  async hitWindow(key: string, windowMs: number, hits = 1): Promise<{ count: number; resetMs: number }> {
    const res = await this.eval(HIT_WINDOW, this.k(key), String(positiveMs(windowMs)), String(positiveCount(hits)));
    if (!Array.isArray(res) || res.length !== 2) throw new Error('unexpected reply from hit-window script');
    return { count: Number(res[0]), resetMs: Number(res[1]) };
  }

  async reserveToken(
    key: string,
    ratePerSecond: number,
    burst: number,
    maxWaitMs: number,
  ): Promise<{ granted: boolean; waitMs: number }> {
    const res = await this.eval(
      RESERVE_TOKEN,
      this.k(key),
      String(ratePerSecond),
      String(burst),
      String(Math.max(0, Math.floor(maxWaitMs))),
    );
    if (!Array.isArray(res) || res.length !== 2) throw new Error('unexpected reply from token-bucket script');
    return { granted: Number(res[0]) === 1, waitMs: Number(res[1]) };
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end') return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  /** EVALSHA with a one-time EVAL fallback when the server has not cached the script yet (restart, failover). */
  private async eval(script: Script, key: string, ...args: string[]): Promise<unknown> {
    try {
      return await this.redis.evalsha(script.sha, 1, key, ...args);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT'))
        return this.redis.eval(script.source, 1, key, ...args);
      throw err;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// In-process

interface Entry {
  value: string;
  /** epoch ms; undefined = no expiry */
  expiresAt: number | undefined;
}

/** Single-instance fallback. Every method completes synchronously, so each is atomic on the event loop. */
export class MemoryKv implements KvStore {
  readonly kind = 'memory' as const;
  private readonly map = new Map<string, Entry>();
  private readonly sweeper: NodeJS.Timeout;

  private readonly prefix: string;
  constructor(prefix = DEFAULT_KEY_PREFIX) {
    this.prefix = prefix;
    // Expired keys are dropped lazily on access; the sweep only bounds memory for keys never read again.
    this.sweeper = setInterval(() => this.sweep(), 30_000);
    this.sweeper.unref();
  }

  private live(key: string): Entry | undefined {
    const k = this.prefix + key;
    const e = this.map.get(k);
    if (e && e.expiresAt !== undefined && e.expiresAt <= Date.now()) {
      this.map.delete(k);
      return undefined;
    }
    return e;
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, opts: KvSetOptions = {}): Promise<boolean> {
    const ttl = opts.ttlMs !== undefined ? positiveMs(opts.ttlMs) : undefined;
    if (opts.nx && this.live(key)) return false;
    this.map.set(this.prefix + key, { value, expiresAt: ttl !== undefined ? Date.now() + ttl : undefined });
    return true;
  }

  async del(...keys: string[]): Promise<number> {
    let n = 0;
    for (const key of keys) {
      if (this.live(key)) {
        this.map.delete(this.prefix + key);
        n += 1;
      }
    }
    return n;
  }

  async getDel(key: string): Promise<string | null> {
    const e = this.live(key);
    if (!e) return null;
    this.map.delete(this.prefix + key);
    return e.value;
  }

  async incr(key: string, ttlMs?: number): Promise<number> {
    return this.incrSync(key, ttlMs === undefined ? undefined : positiveMs(ttlMs));
  }

  async ttlMs(key: string): Promise<number> {
    return this.ttlSync(key);
  }

  private ttlSync(key: string): number {
    const e = this.live(key);
    if (!e) return -2;
    if (e.expiresAt === undefined) return -1;
    return Math.max(0, e.expiresAt - Date.now());
  }

  async hitWindow(key: string, windowMs: number, hits = 1): Promise<{ count: number; resetMs: number }> {
    // No await between the increment and reading the expiry: the pair is one atomic step.
    const count = this.incrSync(key, positiveMs(windowMs), positiveCount(hits));
    return { count, resetMs: this.ttlSync(key) };
  }

  private readonly buckets = new Map<string, { tokens: number; ts: number }>();

  async reserveToken(
    key: string,
    ratePerSecond: number,
    burst: number,
    maxWaitMs: number,
  ): Promise<{ granted: boolean; waitMs: number }> {
    // Same arithmetic as the Valkey script, synchronously (atomic on the event loop).
    const now = Date.now();
    const k = this.prefix + key;
    const b = this.buckets.get(k) ?? { tokens: burst, ts: now };
    if (now > b.ts) {
      b.tokens = Math.min(burst, b.tokens + ((now - b.ts) * ratePerSecond) / 1000);
      b.ts = now;
    }
    const after = b.tokens - 1;
    const waitMs = after < 0 ? Math.ceil((-after * 1000) / ratePerSecond) : 0;
    if (waitMs > maxWaitMs) return { granted: false, waitMs };
    b.tokens = after;
    this.buckets.set(k, b);
    return { granted: true, waitMs };
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.map.clear();
  }

  private incrSync(key: string, ttl: number | undefined, by = 1): number {
    const e = this.live(key);
    // Same refusal as Redis for a non-integer value, so callers see identical behaviour on both backends.
    if (e && !/^-?\d+$/.test(e.value)) throw new Error('ERR value is not an integer or out of range');
    const next = (e ? Number(e.value) : 0) + by;
    const expiresAt = e?.expiresAt ?? (ttl !== undefined ? Date.now() + ttl : undefined);
    this.map.set(this.prefix + key, { value: String(next), expiresAt });
    return next;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [k, e] of this.map) if (e.expiresAt !== undefined && e.expiresAt <= now) this.map.delete(k);
  }
}

/** INCRBY takes an integer; a reservation of none or fewer would be a caller's bug. */
function positiveCount(n: number): number {
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`a count must be a positive integer, got ${n}`);
  return n;
}

/** Redis rejects PX 0 and fractional values; normalize once so both backends agree. */
function positiveMs(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) throw new RangeError(`ttl must be a positive number of ms, got ${ms}`);
  return Math.max(1, Math.ceil(ms));
}
