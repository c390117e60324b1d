import { DomainError } from '../../../contracts/errors.ts';
import type { Logger } from '../../../platform/logger.ts';
import { MemoryKv, type KvStore } from '../../../platform/stores/kv.ts';

/** The issue-tracker client's token bucket: 50 requests per second, burst 10 (docs/api/service-desk.md). */
export const TRACKER_RATE_PER_SECOND = 50;
export const TRACKER_BURST = 10;
const KEY = 'sd:tracker-bucket';

/**
 * The one token bucket every call to the tracker passes, shared by every instance through Valkey. A call reserves a
 * token and sleeps until its turn, so a burst of callers leaves at exactly the bucket's rate. When Valkey cannot be
 * reached the bucket falls back to an in-process one (each instance then keeps the limit on its own), logged once.
 */
export class TokenBucket {
  private readonly local = new MemoryKv('sd-local:');
  private degraded = false;

  private readonly kv: KvStore;
  private readonly log: Logger;
  readonly ratePerSecond: number;
  readonly burst: number;
  constructor(kv: KvStore, log: Logger, ratePerSecond = TRACKER_RATE_PER_SECOND, burst = TRACKER_BURST) {
    this.kv = kv;
    this.log = log;
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
  }

  /** Waits for a token; a wait longer than `maxWaitMs` is refused with 429 instead (nothing is reserved then). */
  async take(maxWaitMs: number, signal?: AbortSignal): Promise<void> {
    let r: { granted: boolean; waitMs: number };
    try {
      r = await this.kv.reserveToken(KEY, this.ratePerSecond, this.burst, maxWaitMs);
      this.degraded = false;
    } catch (err) {
      if (!this.degraded)
        this.log.warn(
          { err },
          'token bucket in Valkey unavailable; limiting calls to the issue tracker per instance meanwhile',
        );
      this.degraded = true;
      r = await this.local.reserveToken(KEY, this.ratePerSecond, this.burst, maxWaitMs);
    }
    if (!r.granted) {
      throw new DomainError('too_many_requests', 'too many calls to the issue tracker right now; retry later', {
        retry_after_seconds: Math.max(1, Math.ceil(r.waitMs / 1000)),
      });
    }
    if (r.waitMs > 0) await sleep(r.waitMs, signal);
  }

  async close(): Promise<void> {
    await this.local.close();
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason instanceof Error ? signal.reason : new DomainError('timeout', 'deadline passed'));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason instanceof Error ? signal.reason : new DomainError('timeout', 'deadline passed'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
