import { describe, expect, it } from 'vitest';
import { backoffMs, classifyAttempt, parseRetryAfter } from '../../../actors/events/notifications/retry-policy.ts';

/** The retry decisions of notification deliveries: which outcomes retry, after how long, and when to give up. */

const NOW = new Date('2026-11-21T17:00:00.000Z');
const opts = { maxAttempts: 5, baseMs: 1000, capMs: 60_000, now: NOW };
const status = (s: number, retryAfter?: string | null) => ({ kind: 'response' as const, status: s, retryAfter });

describe('classifyAttempt', () => {
  it('500, 500, 200: two retries with increasing delays, then done', () => {
    const first = classifyAttempt(status(500), 1, opts);
    const second = classifyAttempt(status(500), 2, opts);
    expect(first).toEqual({ action: 'retry', delayMs: 1000, reason: 'the target answered 500' });
    expect(second).toEqual({ action: 'retry', delayMs: 2000, reason: 'the target answered 500' });
    expect(classifyAttempt(status(200), 3, opts)).toEqual({ action: 'done' });
    expect(classifyAttempt(status(204), 1, opts)).toEqual({ action: 'done' });
  });

  it('400 and other 4xx or 3xx are dead at once', () => {
    for (const s of [400, 401, 403, 404, 410, 422, 301, 302, 304]) {
      const d = classifyAttempt(status(s), 1, opts);
      expect(d.action, String(s)).toBe('dead');
    }
    expect(classifyAttempt(status(400), 1, opts)).toMatchObject({ reason: expect.stringContaining('400') });
  });

  it('timeouts, network errors, 429 and other 5xx are retried', () => {
    expect(classifyAttempt({ kind: 'timeout' }, 1, opts)).toMatchObject({ action: 'retry', delayMs: 1000 });
    expect(classifyAttempt({ kind: 'network', message: 'ECONNRESET' }, 3, opts)).toEqual({
      action: 'retry',
      delayMs: 4000,
      reason: 'the connection failed (ECONNRESET)',
    });
    expect(classifyAttempt(status(429), 1, opts)).toMatchObject({ action: 'retry', delayMs: 1000 });
    expect(classifyAttempt(status(502), 2, opts)).toMatchObject({ action: 'retry', delayMs: 2000 });
  });

  it('429 and 503 honour Retry-After in delta-seconds, never below the backoff, capped', () => {
    expect(classifyAttempt(status(429, '30'), 1, opts)).toMatchObject({ action: 'retry', delayMs: 30_000 });
    expect(classifyAttempt(status(503, '1'), 3, opts)).toMatchObject({ delayMs: 4000 });
    expect(classifyAttempt(status(503, '3600'), 1, opts)).toMatchObject({ delayMs: 60_000 });
    // Other statuses ignore it.
    expect(classifyAttempt(status(500, '30'), 1, opts)).toMatchObject({ delayMs: 1000 });
  });

  it('429 and 503 honour Retry-After as an HTTP-date', () => {
    const in20s = new Date(NOW.getTime() + 20_000).toUTCString();
    expect(in20s).toBe('Sat, 21 Nov 2026 17:00:20 GMT');
    expect(classifyAttempt(status(503, in20s), 1, opts)).toMatchObject({ delayMs: 20_000 });
    expect(classifyAttempt(status(429, 'Sat, 21 Nov 2026 16:00:00 GMT'), 2, opts)).toMatchObject({ delayMs: 2000 });
    expect(classifyAttempt(status(429, 'Sun, 22 Nov 2026 17:00:00 GMT'), 1, opts)).toMatchObject({ delayMs: 60_000 });
    expect(classifyAttempt(status(429, 'soon'), 1, opts)).toMatchObject({ delayMs: 1000 });
  });

  it('the backoff doubles up to the cap', () => {
    const long = { ...opts, maxAttempts: 100 };
    const delays = [1, 2, 3, 4, 5, 6, 7, 8, 60].map((n) => {
      const d = classifyAttempt({ kind: 'timeout' }, n, long);
      return d.action === 'retry' ? d.delayMs : -1;
    });
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  });

  it('gives up after maxAttempts', () => {
    expect(classifyAttempt(status(500), 4, opts).action).toBe('retry');
    expect(classifyAttempt(status(500), 5, opts)).toEqual({
      action: 'dead',
      reason: 'the target answered 500; gave up after 5 attempts',
    });
    expect(classifyAttempt({ kind: 'timeout' }, 6, opts).action).toBe('dead');
    expect(classifyAttempt(status(200), 5, opts)).toEqual({ action: 'done' });
  });

  it('is deterministic', () => {
    const a = classifyAttempt(status(503, 'Sat, 21 Nov 2026 17:00:40 GMT'), 2, opts);
    expect(classifyAttempt(status(503, 'Sat, 21 Nov 2026 17:00:40 GMT'), 2, opts)).toEqual(a);
  });
});

describe('parseRetryAfter and backoffMs', () => {
  it('reads both forms and refuses others', () => {
    expect(parseRetryAfter('120', NOW)).toBe(120_000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 17:01:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 16:00:00 GMT', NOW)).toBe(0);
    for (const v of [null, undefined, '', '-5', '1.5', 'tomorrow']) expect(parseRetryAfter(v, NOW)).toBeNull();
  });

  it('backoff is base × 2^(attempt − 1), capped', () => {
    expect(backoffMs(1, 500, 10_000)).toBe(500);
    expect(backoffMs(4, 500, 10_000)).toBe(4000);
    expect(backoffMs(2000, 500, 10_000)).toBe(10_000);
  });
});
