import type { Logger } from '../../platform/logger.ts';
import { DomainError } from '../../contracts/errors.ts';

/**
 * closed: requests go to the broker. open: the last health check went unanswered, new API requests are refused.
 * half_open: a health check is deciding whether to close again (requests are still refused meanwhile).
 */
export type BreakerState = 'closed' | 'open' | 'half_open';

/**
 * What one health check found: the broker answered (true), the connection is up but the broker did not answer in time
 * (false: frozen), or the client is between connections (`'reconnecting'`).
 */
export type PingResult = boolean | 'reconnecting';

export interface BrokerBreakerOptions {
  /** Pause between the end of one health check and the start of the next. */
  intervalMs?: number;
  /** A ping unanswered this long means the broker is not answering (what `/readyz` waits). */
  pingTimeoutMs?: number;
  log?: Logger;
}

/**
 * A circuit breaker between a gateway and the message broker. A frozen broker (process stopped, sockets open) keeps
 * the connection "up", so every call would wait its whole deadline for a 504; once the gateway's own health check (a
 * PING the broker must answer, the signal `/readyz` reports) goes unanswered, new API requests are refused at once
 * instead. Only that ping moves the breaker, never how long a user's request took: a slow handler is not a silent
 * broker. While open, the next scheduled ping is the half-open probe; one answered ping closes the breaker.
 */
export class BrokerBreaker {
  private readonly ping: (timeoutMs: number) => Promise<PingResult>;
  private readonly intervalMs: number;
  private readonly pingTimeoutMs: number;
  private readonly log: Logger | undefined;
  private current: BreakerState = 'closed';
  private inFlight: Promise<boolean> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(ping: (timeoutMs: number) => Promise<PingResult>, opts: BrokerBreakerOptions = {}) {
    this.ping = ping;
    this.intervalMs = opts.intervalMs ?? 1000;
    this.pingTimeoutMs = opts.pingTimeoutMs ?? 1500;
    this.log = opts.log;
  }

  get state(): BreakerState {
    return this.current;
  }

  /** The longest until the breaker can close again: the next check's pause plus its ping. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.intervalMs + this.pingTimeoutMs) / 1000));
  }

  /** Starts the periodic health check (the first one at once). */
  start(): this {
    if (this.running) return this;
    this.running = true;
    this.schedule(0);
    return this;
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
  }

  /**
   * One health check, whose answer moves the breaker; callers at the same time (the timer, `/readyz`) share the ping
   * in flight, so an open breaker is decided by exactly one probe.
   */
  check(): Promise<boolean> {
    this.inFlight ??= this.probe().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /** The refusal for a new API request while the broker is not answering; undefined when it may go ahead. */
  refusal(): DomainError | undefined {
    if (this.current === 'closed') return undefined;
    const seconds = this.retryAfterSeconds;
    return new DomainError('unavailable', `the message broker is not answering; retry in ${seconds} s`, {
      retry_after_seconds: seconds,
    });
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      void this.check().finally(() => {
        if (this.running) this.schedule(this.intervalMs);
      });
    }, ms);
    // The check never keeps a process alive on its own.
    this.timer.unref();
  }

  private async probe(): Promise<boolean> {
    if (this.current === 'open') this.current = 'half_open';
    const result = await this.ping(this.pingTimeoutMs).catch(() => false as const);
    // Between connections the breaker holds its state: losing a cluster node's connection is a reconnect of well under
    // a second (the client buffers what is sent meanwhile), not a silent broker, and refusing every request of that
    // moment would turn a failover into thousands of 503s. A broker that stays away keeps callers on the
    // disconnected path (503 at once); one that is frozen keeps the connection up and opens the breaker.
    if (result === 'reconnecting') {
      if (this.current === 'half_open') this.current = 'open';
      return false;
    }
    const ok = result;
    if (ok && this.current !== 'closed') this.log?.info('message broker answers again; API requests are served');
    if (!ok && this.current === 'closed')
      this.log?.warn(
        { ping_timeout_ms: this.pingTimeoutMs },
        'message broker not answering; API requests are refused with 503 until it does',
      );
    this.current = ok ? 'closed' : 'open';
    return ok;
  }
}
