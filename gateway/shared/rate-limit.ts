import type { FastifyRequest } from 'fastify';
import type { KvStore } from '../../platform/stores/kv.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { RateClass } from './bridge.ts';

export interface RateLimits {
  /** Public authentication routes, per minute per IP (SVC_AUTH_RATE_LIMIT). */
  auth: number;
  /** Every other route, per minute per IP (SVC_API_RATE_LIMIT). */
  api: number;
}

const WINDOW_MS = 60_000;

/**
 * Fixed one-minute windows per IP and class, counted in Valkey so every gateway instance shares them.
 * A counting failure lets the request through: an unreachable cache must not take the API down with it.
 * Hits are reserved from the shared counter in batches (RateWindows), so a busy address costs a Valkey round trip
 * per batch, not per request, and no instance ever lets more than the limit through.
 */
export function rateLimitGuard(
  kv: KvStore,
  limits: RateLimits,
  onError?: (err: unknown) => void,
  windowMs = WINDOW_MS,
) {
  const windows = { auth: new RateWindows(kv, limits.auth, windowMs), api: new RateWindows(kv, limits.api, windowMs) };
  return async (req: Pick<FastifyRequest, 'ip'>, kind: RateClass): Promise<void> => {
    if (kind === 'none') return;
    let verdict: Verdict;
    try {
      verdict = await windows[kind].hit(`rl:${kind}:${req.ip}`);
    } catch (err) {
      onError?.(err);
      return;
    }
    if (!verdict.allowed) {
      throw new DomainError('too_many_requests', 'rate limit exceeded; retry later', {
        retry_after_seconds: Math.max(1, Math.ceil(verdict.resetMs / 1000)),
      });
    }
  };
}

export type Verdict = { allowed: true } | { allowed: false; resetMs: number };

/** Hits this instance holds for one key in the current window. */
interface Lease {
  /** Local time the shared window ends (no later than Valkey's: measured from before the reservation was sent). */
  endsAt: number;
  /** Reserved in the shared counter and not yet used. */
  left: number;
  /** The shared counter has reached the limit: every further hit of this window is refused without asking. */
  full: boolean;
  /** The next reservation's size: doubles with every one used up in the window. */
  batch: number;
  /** Hits waiting for the reservation in flight, in arrival order. */
  waiting: { resolve: (v: Verdict) => void; reject: (err: unknown) => void }[];
  reserving: boolean;
}

/** The largest batch: an instance may hold at most this many hits unused when a window ends. */
const MAX_BATCH = 64;
/** Leases of ended windows are swept (at most once a window) once the map holds this many. */
const SWEEP_AT = 1_000;

/**
 * Fixed windows counted in the shared store, reserved in batches. A key's first hit in a window reserves 1; each
 * reservation used up doubles the next (up to limit / 20 and MAX_BATCH), so an address making a request now and then
 * is counted exactly, and a busy one asks the store once per batch. The store's counter only grows by reservations
 * and each grants only hits that keep it within the limit, so all instances together never let more than the limit
 * through; what a batch leaves unused when the window ends (at most batch − 1 per instance) counts as spent, which
 * can refuse an address spread over several gateways slightly early, never late. Concurrent hits of one key share
 * one reservation in flight.
 */
export class RateWindows {
  private readonly leases = new Map<string, Lease>();
  private readonly maxBatch: number;
  private sweptAt = 0;

  private readonly kv: Pick<KvStore, 'hitWindow'>;
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  constructor(
    kv: Pick<KvStore, 'hitWindow'>,
    limit: number,
    windowMs: number,
    /** Monotonic: windows are durations from Valkey's answers, so a stepped wall clock must not stretch them. */
    now: () => number = () => performance.now(),
  ) {
    this.kv = kv;
    this.limit = limit;
    this.windowMs = windowMs;
    this.now = now;
    this.maxBatch = Math.max(1, Math.min(MAX_BATCH, Math.floor(limit / 20)));
  }

  /** Keys with a lease held (ended windows stay until swept). */
  get size(): number {
    return this.leases.size;
  }

  hit(key: string): Promise<Verdict> | Verdict {
    const now = this.now();
    let lease = this.leases.get(key);
    if (lease && now >= lease.endsAt && !lease.reserving) {
      this.leases.delete(key);
      lease = undefined;
    }
    if (lease && !lease.reserving) {
      if (lease.left > 0) {
        lease.left--;
        return { allowed: true };
      }
      if (lease.full) return { allowed: false, resetMs: lease.endsAt - now };
    }
    if (!lease) {
      if (this.leases.size >= SWEEP_AT && now - this.sweptAt >= this.windowMs) this.sweep(now);
      lease = { endsAt: now + this.windowMs, left: 0, full: false, batch: 1, waiting: [], reserving: false };
      this.leases.set(key, lease);
    }
    const held = lease;
    const verdict = new Promise<Verdict>((resolve, reject) => held.waiting.push({ resolve, reject }));
    if (!held.reserving) void this.reserve(key, held);
    return verdict;
  }

  /** Reserves enough for everyone waiting (at least the lease's batch) and hands the hits out in order. */
  private async reserve(key: string, lease: Lease): Promise<void> {
    lease.reserving = true;
    while (lease.waiting.length > 0) {
      const waiting = lease.waiting;
      lease.waiting = [];
      const sentAt = this.now();
      // A lease whose window has ended starts the next one from a batch of 1.
      if (sentAt >= lease.endsAt) Object.assign(lease, { left: 0, full: false, batch: 1 });
      const size = Math.max(waiting.length, lease.batch);
      let count: number;
      let resetMs: number;
      try {
        ({ count, resetMs } = await this.kv.hitWindow(key, this.windowMs, size));
      } catch (err) {
        // Nothing is known of the window: the next hit asks again.
        this.leases.delete(key);
        lease.reserving = false;
        for (const w of [...waiting, ...lease.waiting]) w.reject(err);
        return;
      }
      lease.endsAt = sentAt + (resetMs > 0 ? resetMs : this.windowMs);
      let granted = Math.max(0, Math.min(size, this.limit - (count - size)));
      lease.full = count >= this.limit;
      lease.batch = Math.min(this.maxBatch, lease.batch * 2);
      for (const w of waiting) {
        if (granted > 0) {
          granted--;
          w.resolve({ allowed: true });
        } else w.resolve({ allowed: false, resetMs: Math.max(0, lease.endsAt - this.now()) });
      }
      lease.left = granted;
      // Hits that arrived meanwhile belong to the window of their arrival: if this one has ended, what it left is
      // not theirs (nor its refusal), and the next reservation starts the new window.
      if (this.now() >= lease.endsAt) {
        Object.assign(lease, { left: 0, full: false });
        continue;
      }
      // Otherwise they take what is left first; the rest wait for the next reservation (or are refused).
      while (lease.waiting.length > 0 && (lease.left > 0 || lease.full)) {
        const w = lease.waiting.shift()!;
        if (lease.left > 0) {
          lease.left--;
          w.resolve({ allowed: true });
        } else w.resolve({ allowed: false, resetMs: Math.max(0, lease.endsAt - this.now()) });
      }
    }
    lease.reserving = false;
  }

  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [key, lease] of this.leases) if (now >= lease.endsAt && !lease.reserving) this.leases.delete(key);
  }
}
