import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { DomainError } from '../../contracts/errors.ts';
import type { Clock } from '../../platform/clock.ts';
import type { KvStore } from '../../platform/stores/kv.ts';

const MINUTE = 60_000;

/** Failures before the first lock; from there on every further failure locks again. */
export const LOCK_THRESHOLD = 5;

/** Progressive lockout: 5 failures 1 min, 10: 5 min, 15: 15 min, 20 or more: 1 hour (docs/api/identity.md). */
export function lockDurationMs(failures: number): number {
  if (failures >= 20) return 60 * MINUTE;
  if (failures >= 15) return 15 * MINUTE;
  if (failures >= 10) return 5 * MINUTE;
  if (failures >= LOCK_THRESHOLD) return MINUTE;
  return 0;
}

/**
 * Failure counts are forgotten this long after a generation's first attempt (a lock record lives this long past its
 * own end), so an account nobody touches for a day starts clean. Real time: it only bounds storage.
 */
const FORGET_MS = 24 * 60 * MINUTE;

/** A lock: nobody may try before `until` (clock ms). `covers` = failures counted so far; `gen` names the next counter. */
const LockRecord = z.object({ until: z.number(), covers: z.number().int().nonnegative(), gen: z.string().min(1) });
type LockRecord = z.infer<typeof LockRecord>;

/** One admitted attempt: report how it ended. An attempt that ends neither way counts as a failure. */
export interface LockoutAttempt {
  /** The check failed: counts, and from the threshold on locks. */
  fail(): Promise<void>;
  /** The check passed: the counter and any lock are cleared. */
  succeed(): Promise<void>;
  /** `fail()` unless `fail` or `succeed` was already called (for a `finally`). */
  settle(): Promise<void>;
}

/**
 * Progressive lockout kept in the key-value store (Valkey: shared by every instance), with times from the clock.
 *
 * Each attempt is counted atomically (`incr`) BEFORE the expensive check, so parallel guesses cannot slip past the
 * limit while the first ones are still hashing (the published race against lockouts that count only after the
 * check). Counters come in generations: generation "0" starts clean and admits LOCK_THRESHOLD attempts; every lock
 * starts a new generation (a fresh random id) that admits exactly ONE attempt once the lock has expired, because
 * that attempt's failure alone would lock again. An attempt beyond its generation's allowance is a racer: it is
 * refused with 429 before any check, and since the next lock (or the reset of a success) switches to another
 * counter, the racers' increments are simply left behind in the old one, never making the real count run ahead.
 * A lock records the number of failures it covers, which is what the next generation builds on.
 */
export class Lockout {
  private readonly kv: KvStore;
  private readonly clock: Clock;
  private readonly namespace: string;
  constructor(kv: KvStore, clock: Clock, namespace: string) {
    this.kv = kv;
    this.clock = clock;
    this.namespace = namespace;
  }

  private lockKey(subject: string): string {
    return `lockout:${this.namespace}:${subject}:lock`;
  }

  private counterKey(subject: string, gen: string): string {
    return `lockout:${this.namespace}:${subject}:n:${gen}`;
  }

  private async readLock(subject: string): Promise<LockRecord | null> {
    const raw = await this.kv.get(this.lockKey(subject));
    if (!raw) return null;
    try {
      const parsed = LockRecord.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  /** Refuses with 429 during a lock or as a racer; otherwise admits the attempt and counts it. */
  async begin(subject: string): Promise<LockoutAttempt> {
    const lock = await this.readLock(subject);
    const now = this.clock.now();
    if (lock && lock.until > now) throw locked(lock.until - now);
    const gen = lock?.gen ?? '0';
    const base = lock?.covers ?? 0;
    const allowance = base < LOCK_THRESHOLD ? LOCK_THRESHOLD - base : 1;
    const n = await this.kv.incr(this.counterKey(subject, gen), FORGET_MS);
    // Enough attempts are already in flight to reach the next lock if they fail: do not run another check.
    if (n > allowance) throw locked(lockDurationMs(base + allowance));

    let settled = false;
    const fail = async (): Promise<void> => {
      if (settled) return;
      settled = true;
      const failures = base + n;
      const ms = lockDurationMs(failures);
      if (ms === 0) return;
      const record: LockRecord = { until: this.clock.now() + ms, covers: failures, gen: randomUUID() };
      await this.kv.set(this.lockKey(subject), JSON.stringify(record), { ttlMs: ms + FORGET_MS });
    };
    const succeed = async (): Promise<void> => {
      if (settled) return;
      settled = true;
      await this.reset(subject, gen);
    };
    return { fail, succeed, settle: fail };
  }

  /** Clears the counter and any lock (a successful login, a completed password reset). */
  async reset(subject: string, gen?: string): Promise<void> {
    const keys = [this.lockKey(subject), this.counterKey(subject, '0')];
    const current = gen ?? (await this.readLock(subject))?.gen;
    if (current && current !== '0') keys.push(this.counterKey(subject, current));
    await this.kv.del(...keys);
  }
}

function locked(ms: number): DomainError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new DomainError('too_many_requests', `too many failed attempts; try again in ${seconds} seconds`, {
    retry_after_seconds: seconds,
  });
}
