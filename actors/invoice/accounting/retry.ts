/**
 * The accounting push's retry timing. Backoff uses "equal jitter": a delay drawn from [d/2, d] for the schedule's
 * d, so instances retrying after one outage spread out while each still waits at least half the step. A peer's
 * Retry-After wins over the schedule, capped so one answer cannot park a job for hours.
 */

/** Retry-After as milliseconds from `now`: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date (IMF-fixdate and the obsolete forms Date.parse also reads); a date in the past means "now".
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The jittered delay after the n-th failed attempt (1-based); the schedule's last entry repeats. */
export function backoffDelay(
  scheduleMs: readonly number[],
  attempt: number,
  random: () => number = Math.random,
): number {
  const step = scheduleMs[Math.min(Math.max(attempt, 1), scheduleMs.length) - 1] ?? 0;
  return Math.round(step / 2 + random() * (step / 2));
}

/** The delay before the next attempt: the peer's Retry-After (capped at `maxMs`) when it gave one, else the backoff. */
export function nextDelay(opts: {
  retryAfterMs: number | undefined;
  scheduleMs: readonly number[];
  attempt: number;
  maxMs: number;
  random?: () => number;
}): number {
  if (opts.retryAfterMs !== undefined) return Math.min(opts.retryAfterMs, opts.maxMs);
  return backoffDelay(opts.scheduleMs, opts.attempt, opts.random);
}
