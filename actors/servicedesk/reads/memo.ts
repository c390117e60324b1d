import { createHash } from 'node:crypto';
import type { KvStore } from '../../../platform/stores/kv.ts';

const GENERATION = 'sd:generation';
/** Bounds what a cached aggregate may lag behind the clock (metrics that count "the last 30 days", "until now"). */
const TTL_MS = 60_000;

/**
 * The read store changes only when the sync writes a page or a write through this service is recorded: each of those
 * bumps a generation number in Valkey. Aggregates over the store (list totals, board totals, metrics) are memoized
 * per generation, so the same question is not counted again over 100,000 rows until something changed. Valkey
 * unreachable: everything is computed, nothing is cached.
 */
export class ReadMemo {
  private readonly kv: KvStore;
  constructor(kv: KvStore) {
    this.kv = kv;
  }

  /** Call after a change to the store has committed. */
  async bump(): Promise<void> {
    await this.kv.incr(GENERATION).catch(() => undefined);
  }

  async memo<T>(kind: string, sql: string, params: readonly unknown[], compute: () => Promise<T>): Promise<T> {
    let key: string | undefined;
    try {
      const generation = (await this.kv.get(GENERATION)) ?? '0';
      key = `sd:memo:${kind}:${generation}:${createHash('sha1').update(sql).update('\u0000').update(JSON.stringify(params)).digest('hex')}`;
      const hit = await this.kv.get(key);
      if (hit !== null) return JSON.parse(hit) as T;
    } catch {
      key = undefined;
    }
    const value = await compute();
    // Not waited for: the answer is known, and the reply need not wait for Valkey (an unstored value is counted again).
    if (key) void this.kv.set(key, JSON.stringify(value), { ttlMs: TTL_MS }).catch(() => undefined);
    return value;
  }
}
