import type { FastifyRequest } from 'fastify';
import type { KvStore } from '../../actors/runtime/stores/kv.ts';
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
 */
export function rateLimitGuard(kv: KvStore, limits: RateLimits, onError?: (err: unknown) => void) {
  return async (req: FastifyRequest, kind: RateClass): Promise<void> => {
    if (kind === 'none') return;
    let hit: { count: number; resetMs: number };
    try {
      hit = await kv.hitWindow(`rl:${kind}:${req.ip}`, WINDOW_MS);
    } catch (err) {
      onError?.(err);
      return;
    }
    if (hit.count > limits[kind]) {
      throw new DomainError('too_many_requests', 'rate limit exceeded; retry later', { retry_after_seconds: Math.max(1, Math.ceil(hit.resetMs / 1000)) });
    }
  };
}
