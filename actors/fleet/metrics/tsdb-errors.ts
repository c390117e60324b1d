import { DomainError } from '../../../contracts/errors.ts';
import { TsdbError } from './tsdb.ts';

/**
 * What a caller is told when VictoriaMetrics fails or refuses (every metric route, and the query route's stream):
 * - unreachable → 503 `unavailable`; no answer in time, or its own query timeout → 504 `timeout`;
 * - overloaded (429, 503: its concurrency queue is full) → 503;
 * - a limit of the store (samples, series, points per series) → 400 naming it: the query asks for too much;
 * - any other refusal of a caller's own PromQL → 400 with the store's reason; of a query the service built → 502;
 * - any other 5xx → 502 `bad_gateway`.
 * `undefined` for anything that is not a TsdbError (the runtime's usual mapping then applies).
 */
export function tsdbFailure(err: unknown, opts: { callerQuery?: boolean } = {}): DomainError | undefined {
  if (!(err instanceof TsdbError)) return undefined;
  if (err.status === 0) {
    if (/timed out/.test(err.message)) return new DomainError('timeout', 'the metrics store did not answer in time');
    return new DomainError('unavailable', 'the metrics store is unavailable');
  }
  if (err.status === 429 || err.status === 503)
    return new DomainError('unavailable', 'the metrics store is overloaded; retry shortly');
  const reason = storeReason(err.body);
  if (/timeout exceeded|cannot execute query in|deadline exceeded|query timed out/i.test(reason)) {
    return new DomainError(
      'timeout',
      'the query did not finish within its time limit; narrow the range or the selectors',
    );
  }
  if (err.status >= 400 && err.status < 500) {
    if (
      /maxSamplesPerQuery|maxSamplesPerSeries|maxUniqueTimeseries|maxPointsPerTimeseries|maxSeries|maxQueryLen|cannot select more than|too many/i.test(
        reason,
      )
    ) {
      return new DomainError('bad_request', `the query exceeds a limit of the metrics store: ${reason}`);
    }
    if (opts.callerQuery) return new DomainError('bad_request', `the metrics store refused the query: ${reason}`);
  }
  return new DomainError('bad_gateway', `the metrics store failed (HTTP ${err.status})`);
}

/** The store's own reason: the `error` member of its JSON answer from the first "cannot …" on, at most 300 characters. */
function storeReason(body: string): string {
  let text = body;
  try {
    const parsed = JSON.parse(body) as { error?: unknown };
    if (typeof parsed.error === 'string') text = parsed.error;
  } catch {
    /* plain text */
  }
  const at = text.search(/cannot /);
  return (at > 0 ? text.slice(at) : text).trim().slice(0, 300);
}
