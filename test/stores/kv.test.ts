import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { MemoryKv, openKv, type KvStore } from '../../platform/stores/kv.ts';
import { testConfig } from '../support/env.ts';
import { capturingLogger } from '../support/log-capture.ts';

const log = createLogger('silent');
const config = testConfig();
const VALKEY_URL = config.SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379';
// Every run gets its own namespace on the shared server, removed afterwards.
const prefix = `test:kv:${randomUUID().slice(0, 8)}:`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** One behaviour, two backends: callers must not be able to tell them apart (except for sharing across processes). */
function contract(name: string, open: () => Promise<KvStore>, kind: KvStore['kind']): void {
  describe(name, () => {
    let kv: KvStore;
    beforeAll(async () => {
      kv = await open();
    });
    afterAll(async () => {
      await kv.close();
    });

    it('is the expected backend and answers ping', async () => {
      expect(kv.kind).toBe(kind);
      await kv.ping();
    });

    it('gets, sets, and refuses to overwrite with nx', async () => {
      expect(await kv.get('missing')).toBeNull();
      expect(await kv.set('a', '1')).toBe(true);
      expect(await kv.get('a')).toBe('1');
      expect(await kv.set('a', '2', { nx: true })).toBe(false);
      expect(await kv.get('a')).toBe('1');
      expect(await kv.set('b', 'x', { nx: true, ttlMs: 5_000 })).toBe(true);
      expect(await kv.set('a', '3')).toBe(true); // plain set overwrites
      expect(await kv.get('a')).toBe('3');
    });

    it('expires keys after their ttl and reports ttl states', async () => {
      await kv.set('short', 'v', { ttlMs: 150 });
      const ttl = await kv.ttlMs('short');
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(150);
      await kv.set('forever', 'v');
      expect(await kv.ttlMs('forever')).toBe(-1);
      expect(await kv.ttlMs('never-set')).toBe(-2);
      await sleep(250);
      expect(await kv.get('short')).toBeNull();
      expect(await kv.ttlMs('short')).toBe(-2);
      // An expired key no longer blocks nx.
      expect(await kv.set('short', 'again', { nx: true })).toBe(true);
    });

    it('deletes several keys and counts only those that existed', async () => {
      await kv.set('d1', '1');
      await kv.set('d2', '2');
      expect(await kv.del('d1', 'd2', 'd3')).toBe(2);
      expect(await kv.del()).toBe(0);
      expect(await kv.get('d1')).toBeNull();
    });

    it('increments atomically under 50 concurrent callers', async () => {
      const results = await Promise.all(range(50).map(() => kv.incr('counter')));
      expect([...results].sort((x, y) => x - y)).toEqual(range(50));
      expect(await kv.get('counter')).toBe('50');
      expect(await kv.ttlMs('counter')).toBe(-1);
    });

    it('sets the ttl on the first increment and never extends it', async () => {
      expect(await kv.incr('lockout', 300)).toBe(1);
      const first = await kv.ttlMs('lockout');
      expect(first).toBeGreaterThan(0);
      expect(first).toBeLessThanOrEqual(300);
      expect(await kv.incr('lockout', 60_000)).toBe(2);
      expect(await kv.ttlMs('lockout')).toBeLessThanOrEqual(300);
      await sleep(400);
      expect(await kv.incr('lockout', 300)).toBe(1); // a fresh window
    });

    it('refuses to increment a non-integer value', async () => {
      await kv.set('word', 'abc');
      await expect(kv.incr('word')).rejects.toThrow(/not an integer/);
    });

    it('gives a single-use value to exactly one of many concurrent getDel callers', async () => {
      await kv.set('challenge', 'secret', { ttlMs: 10_000 });
      const results = await Promise.all(range(30).map(() => kv.getDel('challenge')));
      expect(results.filter((r) => r === 'secret')).toHaveLength(1);
      expect(results.filter((r) => r === null)).toHaveLength(29);
      expect(await kv.get('challenge')).toBeNull();
      expect(await kv.getDel('challenge')).toBeNull();
    });

    it('counts hits in a fixed window and starts over when it ends', async () => {
      const hits = await Promise.all(range(20).map(() => kv.hitWindow('rl:1.2.3.4', 400)));
      expect(hits.map((h) => h.count).sort((x, y) => x - y)).toEqual(range(20));
      for (const h of hits) {
        expect(h.resetMs).toBeGreaterThan(0);
        expect(h.resetMs).toBeLessThanOrEqual(400);
      }
      // The window is fixed: hits do not push its end out.
      const last = await kv.hitWindow('rl:1.2.3.4', 400);
      expect(last.count).toBe(21);
      expect(last.resetMs).toBeLessThanOrEqual(Math.max(...hits.map((h) => h.resetMs)));
      await sleep(500);
      expect((await kv.hitWindow('rl:1.2.3.4', 400)).count).toBe(1);
    });

    it('counts several hits at once (a reservation) in the same window', async () => {
      expect(await kv.hitWindow('rl:batch', 5_000, 5)).toMatchObject({ count: 5 });
      const next = await kv.hitWindow('rl:batch', 5_000, 3);
      expect(next.count).toBe(8);
      expect(next.resetMs).toBeGreaterThan(0);
      expect(next.resetMs).toBeLessThanOrEqual(5_000);
      expect((await kv.hitWindow('rl:batch', 5_000)).count).toBe(9);
    });

    it('rejects a non-positive ttl or hit count', async () => {
      await expect(kv.set('z', '1', { ttlMs: 0 })).rejects.toThrow(RangeError);
      await expect(kv.hitWindow('z', -5)).rejects.toThrow(RangeError);
      await expect(kv.hitWindow('z', 1_000, 0)).rejects.toThrow(RangeError);
      await expect(kv.hitWindow('z', 1_000, 1.5)).rejects.toThrow(RangeError);
      expect(await kv.get('z')).toBeNull();
    });
  });
}

describe('valkey-specific', () => {
  let raw: Redis;
  beforeAll(() => {
    raw = new Redis(VALKEY_URL);
  });
  afterAll(async () => {
    const keys = await raw.keys(`${prefix}*`);
    if (keys.length > 0) await raw.del(...keys);
    await raw.quit();
  });

  contract('valkey', () => openKv(config, log, { keyPrefix: prefix }), 'valkey');

  it('stores keys under the prefix, and two prefixes do not see each other', async () => {
    const a = await openKv(config, log, { keyPrefix: `${prefix}A:` });
    const b = await openKv(config, log, { keyPrefix: `${prefix}B:` });
    try {
      await a.set('k', 'from-a');
      expect(await raw.get(`${prefix}A:k`)).toBe('from-a');
      expect(await b.get('k')).toBeNull();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('shares counters between instances (what makes it safe for several gateways)', async () => {
    const a = await openKv(config, log, { keyPrefix: prefix });
    const b = await openKv(config, log, { keyPrefix: prefix });
    try {
      const results = await Promise.all(range(40).map((i) => (i % 2 ? a : b).hitWindow('shared-window', 5_000)));
      expect(results.map((r) => r.count).sort((x, y) => x - y)).toEqual(range(40));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('reloads its scripts after the server forgot them (restart, failover)', async () => {
    const kv = await openKv(config, log, { keyPrefix: prefix });
    try {
      expect(await kv.incr('after-flush', 10_000)).toBe(1);
      await raw.script('FLUSH');
      expect(await kv.incr('after-flush', 10_000)).toBe(2);
      expect((await kv.hitWindow('after-flush-window', 10_000)).count).toBe(1);
    } finally {
      await kv.close();
    }
  });
});

contract('memory', async () => new MemoryKv(prefix), 'memory');

describe('openKv without SVC_VALKEY_URL', () => {
  it('falls back to the in-process store and warns that it is single-instance only', async () => {
    const { log: warnings, lines } = capturingLogger('warn');
    const kv = await openKv({ SVC_VALKEY_URL: undefined }, warnings);
    try {
      expect(kv.kind).toBe('memory');
      expect(lines.map((l) => l.msg).join('\n')).toMatch(/in-process/);
    } finally {
      await kv.close();
    }
  });
});
