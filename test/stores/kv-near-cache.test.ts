import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { openNearCache, type NearCache } from '../../platform/stores/kv-near-cache.ts';
import { testConfig } from '../support/env.ts';
import { capturingLogger } from '../support/log-capture.ts';

const log = createLogger('silent');
const VALKEY_URL = testConfig().SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379';
// Every run gets its own namespace on the shared server, removed afterwards.
const prefix = `test:near:${randomUUID().slice(0, 8)}:`;

/** Another process's connection: the identity domain writing and deleting access entries. */
let writer: Redis;
let cache: NearCache;
let now = 1_000_000;

beforeAll(async () => {
  writer = new Redis(VALKEY_URL);
  cache = await openNearCache(VALKEY_URL, log, prefix, {
    maxEntries: 3,
    maxAgeMs: 10_000,
    checkEveryMs: 200,
    now: () => now,
  });
});

afterAll(async () => {
  await cache.close();
  const keys = await writer.keys(`${prefix}*`);
  if (keys.length > 0) await writer.del(...keys);
  await writer.quit();
});

/** The cache's own two connections, and their ids on the server (other runs may share it). */
const internals = () =>
  cache as unknown as { reads: Redis; redirect: number; inFlight: Map<string, { changed: boolean }> };
const connectionId = async (which: 'reads' | 'announcements'): Promise<number> =>
  which === 'reads' ? Number(await internals().reads.client('ID')) : internals().redirect;

/** The server closes one of the cache's connections; resolves once the cache has stopped trusting what it keeps. */
const dropConnection = async (which: 'reads' | 'announcements'): Promise<void> => {
  expect(await writer.client('KILL', 'ID', String(await connectionId(which)))).toBe(1);
  await vi.waitFor(() => expect(cache.tracking).toBe(false), { timeout: 2_000, interval: 5 });
};
const trackingAgain = (): Promise<void> =>
  vi.waitFor(() => expect(cache.tracking).toBe(true), { timeout: 5_000, interval: 20 });

/** Waits until `key` reads `want` through the cache: a change is announced on another connection, a moment later. */
const eventually = (key: string, want: string | null): Promise<void> =>
  vi.waitFor(async () => expect(await cache.get(key)).toBe(want), { timeout: 2_000, interval: 5 });

describe('NearCache (server-assisted client-side caching on Valkey)', () => {
  it('keeps a value after its first read, and reads it again once another client changes or deletes it', async () => {
    expect(cache.tracking).toBe(true);
    await writer.set(`${prefix}user:1`, 'v1');
    const before = { ...cache.stats };
    expect(await cache.get('user:1')).toBe('v1');
    expect(await cache.get('user:1')).toBe('v1');
    expect(await cache.get('user:1')).toBe('v1');
    expect(cache.stats.misses - before.misses).toBe(1);
    expect(cache.stats.hits - before.hits).toBe(2);

    await writer.set(`${prefix}user:1`, 'v2');
    await eventually('user:1', 'v2');
    await writer.del(`${prefix}user:1`);
    await eventually('user:1', null);
    // A missing key is never kept: the resolver filling it is seen by the next read.
    await writer.set(`${prefix}user:1`, 'v3');
    expect(await cache.get('user:1')).toBe('v3');
    // Expiry is a change too. Valkey announces the PEXPIRE at once, but the expiry itself only when its cycle gets
    // there (seconds, with many keys holding a TTL); a read between the two keeps the value for its remaining TTL on
    // the cache's clock. So both clocks pass it: the real one (Valkey then reads the key as gone) and the cache's.
    await writer.pexpire(`${prefix}user:1`, 50);
    await new Promise((r) => setTimeout(r, 60));
    now += 100;
    await eventually('user:1', null);
  });

  it("never serves a kept value past its key's expiry, announced or not", async () => {
    // Shorter than the cache's maxAgeMs (10 s), so only the key's expiry can end the kept copy.
    await writer.set(`${prefix}ttl`, 'short', 'PX', 5_000);
    expect(await cache.get('ttl')).toBe('short');
    const before = { ...cache.stats };
    expect(await cache.get('ttl')).toBe('short');
    expect(cache.stats.hits - before.hits).toBe(1);
    // Valkey still holds it (its own clock has not moved): only the kept copy's expiry has passed.
    now += 5_001;
    expect(await cache.get('ttl')).toBe('short');
    expect(cache.stats.misses - before.misses).toBe(1);
    // A key without an expiry is kept for maxAgeMs, as before.
    await writer.set(`${prefix}forever`, 'x');
    expect(await cache.get('forever')).toBe('x');
    const hits = cache.stats.hits;
    expect(await cache.get('forever')).toBe('x');
    expect(cache.stats.hits).toBe(hits + 1);
  });

  it('does not keep a value read while its key was announced as changed', async () => {
    await writer.set(`${prefix}race`, 'old');
    // The read is answered with 'old'; the announcement of a write that followed arrives before the answer is used.
    const { inFlight } = internals();
    // The cache's read of a key (GET and PTTL in one round trip).
    const reader = cache as unknown as { readWithTtl: (key: string) => Promise<[string | null, number]> };
    const original = reader.readWithTtl.bind(cache);
    const spy = vi.spyOn(reader, 'readWithTtl').mockImplementationOnce(async (key) => {
      const answer = await original(key);
      await writer.set(`${prefix}race`, 'new');
      await vi.waitFor(() => expect(inFlight.get(`${prefix}race`)?.changed).toBe(true), {
        timeout: 2_000,
        interval: 5,
      });
      return answer;
    });
    expect(await cache.get('race')).toBe('old');
    spy.mockRestore();
    expect(await cache.get('race')).toBe('new');
  });

  it('keeps at most maxEntries values and none past maxAgeMs', async () => {
    for (const k of ['a', 'b', 'c', 'd']) await writer.set(`${prefix}${k}`, k);
    for (const k of ['a', 'b', 'c', 'd']) await cache.get(k);
    const before = { ...cache.stats };
    await cache.get('d');
    await cache.get('a'); // the oldest went when 'd' came
    expect(cache.stats.hits - before.hits).toBe(1);
    expect(cache.stats.misses - before.misses).toBe(1);
    now += 10_001;
    const after = { ...cache.stats };
    await cache.get('d');
    expect(cache.stats.misses - after.misses).toBe(1);
  });

  it('forgets everything when its announcement connection drops, and keeps values again once tracking is back', async () => {
    await writer.set(`${prefix}conn`, 'one');
    expect(await cache.get('conn')).toBe('one');
    // The server closes the subscriber: announcements made until it is back would be lost.
    await dropConnection('announcements');
    await writer.set(`${prefix}conn`, 'two');
    expect(await cache.get('conn')).toBe('two');
    await trackingAgain();
    // Tracking again with the new subscriber: a kept value is served, and a change to it is announced.
    expect(await cache.get('conn')).toBe('two');
    const before = cache.stats.hits;
    expect(await cache.get('conn')).toBe('two');
    expect(cache.stats.hits).toBe(before + 1);
    await writer.set(`${prefix}conn`, 'three');
    await eventually('conn', 'three');
  });

  it('reads through when its read connection is dropped and re-enables tracking on the new one', async () => {
    await writer.set(`${prefix}reads`, 'r1');
    expect(await cache.get('reads')).toBe('r1');
    await dropConnection('reads');
    // A change while the cache was not tracking is read, not served from memory; until the connection is back, a
    // read fails at once, as the shared store's do (the access cache counts that as a miss).
    await writer.set(`${prefix}reads`, 'r1b');
    expect(await cache.get('reads').catch(() => 'failed')).toMatch(/^(r1b|failed)$/);
    await trackingAgain();
    expect(await cache.get('reads')).toBe('r1b');
    expect(await cache.get('reads')).toBe('r1b');
    await writer.set(`${prefix}reads`, 'r2');
    await eventually('reads', 'r2');
  });

  it('finds a loop that stopped announcing within a check, and sets it up again', async () => {
    await writer.set(`${prefix}silent`, 's1');
    expect(await cache.get('silent')).toBe('s1');
    expect(await cache.get('silent')).toBe('s1');
    // Tracking turned off behind the cache's back: both connections stay up, and nothing is announced any more.
    await internals().reads.client('TRACKING', 'OFF');
    await writer.set(`${prefix}silent`, 's2');
    await eventually('silent', 's2');
    await trackingAgain();
    await writer.set(`${prefix}silent`, 's3');
    await eventually('silent', 's3');
  });

  it('retries a set-up that fails at every check, logging its reason once, and tracks once it succeeds', async () => {
    const { log: warnings, lines } = capturingLogger('warn');
    const other = await openNearCache(VALKEY_URL, warnings, prefix, { checkEveryMs: 50 });
    try {
      expect(other.tracking).toBe(true);
      const state = other as unknown as { redirect: number; trusted: boolean };
      const id = state.redirect;
      // Tracking redirected to a connection that does not exist: the server refuses it at every attempt.
      state.redirect = 2_000_000_000;
      state.trusted = false;
      await new Promise((r) => setTimeout(r, 500));
      expect(other.tracking).toBe(false);
      expect(lines.filter((l) => l.msg.includes('tracking could not be set up'))).toHaveLength(1);
      state.redirect = id;
      await vi.waitFor(() => expect(other.tracking).toBe(true), { timeout: 2_000, interval: 20 });
    } finally {
      await other.close();
    }
  });

  it('closes without warning of the connections it drops itself', async () => {
    const { log: warnings, lines } = capturingLogger('warn');
    const other = await openNearCache(VALKEY_URL, warnings, prefix);
    expect(other.tracking).toBe(true);
    await other.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(other.tracking).toBe(false);
    expect(lines).toEqual([]);
  });

  it('settles: once settled() resolves, a key another connection changed reads its new value at once', async () => {
    for (let i = 0; i < 40; i++) {
      const key = `settle-${i}`;
      await writer.set(`${prefix}${key}`, 'old');
      expect(await cache.get(key)).toBe('old');
      expect(await cache.get(key)).toBe('old');
      await writer.set(`${prefix}${key}`, 'new');
      await cache.settled();
      expect(await cache.get(key)).toBe('new');
    }
  });
});
