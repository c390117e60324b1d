import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.ts';
import { valkeyConnection, type KvReader } from './kv.ts';

export interface NearCacheOptions {
  /** Values kept at most; the oldest go first. Default 10,000. */
  maxEntries?: number;
  /**
   * A kept value is read from Valkey again after this long even if no change was announced: the bound on staleness
   * should announcements stop without either connection noticing (a half-open connection). Default 30 s.
   */
  maxAgeMs?: number;
  /** How often the announcement loop is proven to work (a canary key changed and its announcement awaited). Default 5 s. */
  checkEveryMs?: number;
  now?: () => number;
}

export const TRACKING_CHANNEL = '__redis__:invalidate';

/**
 * Values read from Valkey, kept in this process and dropped the moment Valkey announces that their key changed:
 * server-assisted client-side caching. Reads go over a connection with `CLIENT TRACKING ON REDIRECT <id>`, so the
 * server remembers each key read there and, when one is written, deleted or expires, publishes its name on
 * `__redis__:invalidate` to the connection `<id>`, which this cache subscribes with (RESP2: the announcement is a
 * Pub/Sub message there). A gateway reads its callers' access on every request; kept here, that is one round trip to
 * another process less per request, while a disabled user or a changed role still takes effect on the caller's next
 * request: Valkey writes the announcement before it answers the identity domain's write (only a request arriving in
 * the instant before the gateway reads the announcement can still see the old value).
 *
 * Kept values are trusted only once the loop is proven (a canary key changed and its announcement heard), again every
 * `checkEveryMs`, and only while both connections stay up: when either drops or the loop goes silent, everything kept
 * is forgotten and reads go to Valkey (uncached) until tracking is set up again. A read whose key was announced while
 * it was in flight is not kept (its value may predate the change). A server without CLIENT TRACKING (Redis before 6,
 * some proxies) leaves the cache off: every read goes to Valkey.
 */
export class NearCache implements KvReader {
  /** Values kept, with when they were read and when their key expires (local clock). */
  private readonly entries = new Map<string, { value: string; at: number; expiresAt: number }>();
  /** Keys with reads in flight; `changed` once the key was announced during them. */
  private readonly inFlight = new Map<string, { changed: boolean; reads: number }>();
  /** Bumped whenever kept values stop being trusted: reads begun before it are not kept. */
  private epoch = 0;
  private trusted = false;
  private closed = false;
  private setup: Promise<void> | undefined;
  private readonly maxEntries: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  readonly stats = { hits: 0, misses: 0, announced: 0 };
  /** Bumped when a connection closes: a set-up step begun on the connection before is not used. */
  private readonly generation = { reads: 0, announcements: 0 };
  /** The announcement connection's id, and whether it is subscribed on its current connection. */
  private redirect = 0;
  private subscribed = false;
  private readonly waiters: (() => void)[] = [];
  /** The canary key whose announcement is awaited, and its waiter. */
  private canary: { key: string; heard: () => void } | undefined;
  private canaries = 0;
  private readonly instance = randomUUID();
  private readonly checker: NodeJS.Timeout;
  /** The last set-up failure logged: a server that cannot track is logged once, not at every check. */
  private setupFailure: string | undefined;

  private readonly reads: Redis;
  private readonly announcements: Redis;
  private readonly prefix: string;
  private readonly log: Logger;
  constructor(reads: Redis, announcements: Redis, prefix: string, log: Logger, opts: NearCacheOptions = {}) {
    this.reads = reads;
    this.announcements = announcements;
    this.prefix = prefix;
    this.log = log;
    this.maxEntries = opts.maxEntries ?? 10_000;
    this.maxAgeMs = opts.maxAgeMs ?? 30_000;
    this.now = opts.now ?? Date.now;
    announcements.on('messageBuffer', (channel: Buffer, message: Buffer[] | Buffer | null) => {
      if (channel.toString() === TRACKING_CHANNEL) this.announced(message);
    });
    reads.on('close', () => {
      this.generation.reads++;
      this.distrust();
    });
    announcements.on('close', () => {
      this.generation.announcements++;
      this.subscribed = false;
      this.distrust();
    });
    for (const conn of [reads, announcements]) conn.on('ready', () => void this.track());
    if (this.bothReady()) void this.track();
    // Tracking set up again if a set-up failed, and the loop proven while trusted: a half-open connection that
    // announces nothing more is found within a check, not only by maxAgeMs.
    this.checker = setInterval(() => void this.check(), opts.checkEveryMs ?? 5_000).unref();
  }

  /** Resolves once kept values are served, or after `timeoutMs` (reads go through to Valkey meanwhile). */
  whenTracking(timeoutMs: number): Promise<boolean> {
    if (this.trusted) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const waiter = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter) >>> 0, 1);
        resolve(false);
      }, timeoutMs).unref();
      this.waiters.push(waiter);
    });
  }

  /** Whether kept values are being served (tracking is set up on both connections). */
  get tracking(): boolean {
    return this.trusted;
  }

  /**
   * Resolves once every change Valkey announced before this call has been applied here: a PING on the announcement
   * connection is answered after the announcements written to it before. For a writer in this same process that
   * changed a key directly and must not read its old value next (tests do); across processes, the path from one
   * service to another is longer than the announcement's.
   */
  async settled(): Promise<void> {
    if (this.announcements.status !== 'ready') return;
    await this.announcements.ping().catch(() => undefined);
  }

  async get(key: string): Promise<string | null> {
    const k = this.prefix + key;
    const kept = this.entries.get(k);
    if (kept && this.trusted) {
      const now = this.now();
      if (now - kept.at < this.maxAgeMs && now < kept.expiresAt) {
        this.stats.hits++;
        return kept.value;
      }
      this.entries.delete(k);
    }
    this.stats.misses++;
    const epoch = this.trusted ? this.epoch : -1;
    let flight = this.inFlight.get(k);
    if (!flight || flight.changed) this.inFlight.set(k, (flight = { changed: false, reads: 0 }));
    flight.reads++;
    try {
      // The key's time to live comes with it: Valkey announces an expiry only once its expiry cycle reaches the key,
      // seconds late when many keys have one, and a kept value must not outlive what a GET would see.
      const [value, ttlMs] = await this.readWithTtl(k);
      // Kept only if tracking held throughout and the key was not announced meanwhile; a missing key is not kept
      // (whoever fills it writes it, and the next read finds it).
      if (value !== null && ttlMs !== -2 && epoch === this.epoch && this.trusted && !flight.changed)
        this.keep(k, value, ttlMs >= 0 ? this.now() + ttlMs : Infinity);
      return value;
    } finally {
      flight.reads--;
      if (flight.reads === 0 && this.inFlight.get(k) === flight) this.inFlight.delete(k);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.checker);
    this.distrust();
    await Promise.all(
      [this.reads, this.announcements].map((c) =>
        c.status === 'end' ? undefined : c.quit().catch(() => c.disconnect()),
      ),
    );
  }

  /** GET and PTTL in one round trip (PTTL: ms left, -1 without expiry, -2 gone). */
  private async readWithTtl(key: string): Promise<[string | null, number]> {
    const replies = (await this.reads.pipeline().get(key).pttl(key).exec()) ?? [];
    const [got, ttl] = replies;
    if (!got || !ttl) throw new Error('valkey near cache: no reply to GET and PTTL');
    if (got[0]) throw got[0];
    if (ttl[0]) throw ttl[0];
    return [got[1] as string | null, Number(ttl[1])];
  }

  private keep(key: string, value: string, expiresAt: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, at: this.now(), expiresAt });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Keys announced as changed (null: all of them, e.g. after FLUSHALL or when the server's tracking table overflowed). */
  private announced(message: Buffer[] | Buffer | null): void {
    this.stats.announced++;
    if (message === null || !Array.isArray(message)) {
      this.forgetAll();
      this.canary?.heard();
      return;
    }
    for (const raw of message) {
      const key = raw.toString();
      if (key === this.canary?.key) this.canary.heard();
      this.entries.delete(key);
      const flight = this.inFlight.get(key);
      if (flight) flight.changed = true;
    }
  }

  private forgetAll(): void {
    this.epoch++;
    this.entries.clear();
    for (const flight of this.inFlight.values()) flight.changed = true;
  }

  private distrust(): void {
    // Closing drops the connections on purpose: nothing to warn of.
    if (this.trusted && !this.closed)
      this.log.warn('valkey near cache: a connection dropped; reading through until tracking is set up again');
    this.trusted = false;
    this.forgetAll();
  }

  private bothReady(): boolean {
    return !this.closed && this.reads.status === 'ready' && this.announcements.status === 'ready';
  }

  /** One set-up step or check at a time. */
  private serial(step: () => Promise<void>): Promise<void> {
    this.setup = (this.setup ?? Promise.resolve()).then(step);
    return this.setup;
  }

  /**
   * Subscribes for announcements, turns tracking on redirected there, and proves the loop with a canary before
   * trusting it; run whenever a connection is (re)made. A step whose connection closed meanwhile is not used (its
   * answer may come from the connection before, or its command may have been replayed on the next one).
   */
  private track(): Promise<void> {
    return this.serial(async () => {
      if (this.trusted || !this.bothReady()) return;
      const gen = { ...this.generation };
      const unchanged = (): boolean =>
        this.bothReady() && gen.reads === this.generation.reads && gen.announcements === this.generation.announcements;
      try {
        // The subscriber's id first: a connection in subscriber mode answers nothing else (RESP2).
        if (!this.subscribed) {
          const id = Number(await this.announcements.client('ID'));
          if (!unchanged()) return;
          await this.announcements.subscribe(TRACKING_CHANNEL);
          if (!unchanged()) return;
          this.redirect = id;
          this.subscribed = true;
        }
        await this.reads.client('TRACKING', 'ON', 'REDIRECT', String(this.redirect));
        if (!unchanged()) return;
        if (!(await this.loopWorks())) {
          this.restartAnnouncements('a change to a canary key was not announced');
          return;
        }
        if (!unchanged()) return;
        this.trusted = true;
        this.setupFailure = undefined;
        this.log.debug({ redirect: this.redirect }, 'valkey near cache tracking');
        for (const w of this.waiters.splice(0)) w();
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        if (reason !== this.setupFailure)
          this.log.warn(
            { err: reason },
            'valkey near cache: tracking could not be set up; reads go to valkey until a later attempt',
          );
        this.setupFailure = reason;
      }
    });
  }

  /** Every few seconds: set tracking up if it is not, or prove the trusted loop still announces. */
  private check(): Promise<void> {
    if (!this.trusted) return this.track();
    return this.serial(async () => {
      if (!this.trusted) return;
      const works = await this.loopWorks().catch(() => false);
      if (!works && this.trusted) this.restartAnnouncements('a change to a canary key was not announced in time');
    });
  }

  /** Reads a fresh canary key (tracked from then on), changes it, and waits for the announcement: true when it came. */
  private async loopWorks(timeoutMs = 1_000): Promise<boolean> {
    const key = `${this.prefix}near-cache:${this.instance}:${++this.canaries}`;
    const heard = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.canary = {
        key,
        heard: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
    });
    try {
      await this.reads.get(key);
      await this.reads.set(key, '1', 'PX', 10_000);
      return await heard;
    } finally {
      this.canary = undefined;
    }
  }

  /** The loop is broken: nothing kept is used, and the announcement connection is made again (with a new id). */
  private restartAnnouncements(reason: string): void {
    this.log.warn({ reason }, 'valkey near cache: announcements lost; reading through while tracking is set up again');
    this.distrust();
    this.subscribed = false;
    this.announcements.disconnect(true);
  }
}

/**
 * Opens a near cache on `url` (two connections of its own). Keys are `keyPrefix` + key, as in the shared store's
 * KvStore. Like that store, a read never waits for a connection: while Valkey is down it fails at once.
 */
export async function openNearCache(
  url: string,
  log: Logger,
  keyPrefix: string,
  opts: NearCacheOptions = {},
): Promise<NearCache> {
  // A command unanswered when a connection dropped is not sent again on the next one: a SUBSCRIBE or CLIENT ID
  // replayed there would pair this cache with the wrong connection.
  const reads = valkeyConnection(
    url,
    log,
    { autoResendUnfulfilledCommands: false, connectionName: 'svc-near-cache-reads' },
    'valkey near cache',
  );
  // RESP2: the server announces changes to a RESP2 subscriber as Pub/Sub messages, which ioredis delivers; to a RESP3
  // one as `invalidate` pushes, which it drops. Its subscription is renewed by track() with the new connection's id.
  const announcements = valkeyConnection(
    url,
    log,
    {
      autoResendUnfulfilledCommands: false,
      protocol: 2,
      autoResubscribe: false,
      connectionName: 'svc-near-cache-announcements',
    },
    'valkey near cache',
  );
  const cache = new NearCache(reads, announcements, keyPrefix, log, opts);
  // Bounded: a server down at start-up leaves the cache reading through until it answers.
  await cache.whenTracking(3_000);
  return cache;
}
