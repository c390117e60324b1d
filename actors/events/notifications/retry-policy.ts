/**
 * What to do after one delivery attempt of a notification: done, retry after a delay, or give up (dead letter).
 * Pure and deterministic (the clock comes in `opts.now`), so the delivery loop and its tests agree on every delay.
 */

export type AttemptOutcome =
  | { kind: 'response'; status: number; retryAfter?: string | null }
  | { kind: 'timeout' }
  | { kind: 'network'; message: string };

export type RetryOptions = { maxAttempts: number; baseMs: number; capMs: number; now: Date };

export type AttemptDecision =
  { action: 'done' } | { action: 'retry'; delayMs: number; reason: string } | { action: 'dead'; reason: string };

/** Exponential backoff: base × 2^(attempt − 1), capped; `attempt` is 1-based. */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  const exponent = Math.max(0, attempt - 1);
  return Math.min(capMs, baseMs * 2 ** Math.min(exponent, 52));
}

/**
 * A Retry-After header in milliseconds from `now`: delta-seconds or an HTTP-date (RFC 9110 §10.2.3); null when
 * absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | null {
  if (value == null) return null;
  const text = value.trim();
  if (text === '') return null;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Every HTTP-date form starts with the day name; this refuses signed or fractional numbers Date.parse would accept.
  if (!/^[A-Za-z]{3}/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}

/** Classifies an attempt: 2xx done; timeouts, network errors, 429 and 5xx retried; other statuses dead at once. */
export function classifyAttempt(outcome: AttemptOutcome, attempt: number, opts: RetryOptions): AttemptDecision {
  let reason: string;
  let retryAfterMs: number | null = null;
  if (outcome.kind === 'response') {
    const { status } = outcome;
    if (status >= 200 && status < 300) return { action: 'done' };
    if (status === 429 || (status >= 500 && status < 600)) {
      reason = `the target answered ${status}`;
      if (status === 429 || status === 503) retryAfterMs = parseRetryAfter(outcome.retryAfter, opts.now);
    } else {
      return { action: 'dead', reason: `the target answered ${status}, which a retry will not change` };
    }
  } else if (outcome.kind === 'timeout') {
    reason = 'the target did not answer in time';
  } else {
    reason = `the connection failed (${outcome.message})`;
  }
  if (attempt >= opts.maxAttempts)
    return { action: 'dead', reason: `${reason}; gave up after ${opts.maxAttempts} attempts` };
  const backoff = backoffMs(attempt, opts.baseMs, opts.capMs);
  // Retry-After may lengthen the wait but never shorten it below the backoff, and never past the cap.
  const delayMs = retryAfterMs === null ? backoff : Math.min(opts.capMs, Math.max(backoff, retryAfterMs));
  return { action: 'retry', delayMs, reason };
}
