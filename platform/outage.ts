import type { Logger } from './logger.ts';
import { pgErrorOf } from './store-errors.ts';

/** Which backing store an unavailability error comes from, for the outage log (`postgres`, `kv`, `tsdb`, ...). */
export function storeOf(err: unknown): string {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (
      pgErrorOf(e) ||
      /Connection terminated|trying to connect|PostgreSQL|ConnectionException/.test(`${e.name} ${e.message}`)
    )
      return 'postgres';
    if (
      e.name === 'MaxRetriesPerRequestError' ||
      /Connection is closed|Stream isn't writeable|Command timed out/.test(e.message)
    )
      return 'kv';
    if (e.name === 'TsdbError') return 'tsdb';
    const { address, port } = e as Error & { address?: unknown; port?: unknown };
    if (typeof address === 'string' && typeof port === 'number') return `${address}:${port}`;
  }
  return 'backing service';
}

/**
 * Logs store outages once per transition instead of once per request: the first request that finds a store
 * unavailable logs `backing store unavailable` at warn (no stack: nothing in this process is broken), the first
 * later success of a subject that had failed on it logs `backing store available again`. Requests in between
 * log at debug. Real faults stay at error level where they are logged.
 */
export class OutageLog {
  /** Store → subjects that found it down since it was last seen up. */
  private readonly down = new Map<string, Set<string>>();

  failed(log: Logger, subject: string, err: unknown): void {
    const store = storeOf(err);
    const subjects = this.down.get(store);
    const reason = err instanceof Error ? err.message.split('\n')[0] : String(err);
    if (subjects) {
      subjects.add(subject);
      log.debug({ store, reason }, 'backing store still unavailable');
      return;
    }
    this.down.set(store, new Set([subject]));
    log.warn({ store, reason }, 'backing store unavailable');
  }

  /** A subject answered normally: every store it had found down is up again. */
  succeeded(log: () => Logger, subject: string): void {
    if (this.down.size === 0) return;
    for (const [store, subjects] of this.down) {
      if (!subjects.has(subject)) continue;
      this.down.delete(store);
      log().warn({ store }, 'backing store available again');
    }
  }
}
