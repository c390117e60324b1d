import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from './logger.ts';

/**
 * Connects and keeps reconnecting forever, with jitter so a fleet of processes does not reconnect in lock-step.
 * `waitOnFirstConnect` lets a process start while NATS is still down: the promise settles once a server answers.
 */
export async function connectNats(url: string, name: string, log: Logger): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    reconnectJitter: 500,
    waitOnFirstConnect: true,
    pingInterval: 20_000,
  });
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') log.warn({ nats: s.type }, 'nats connection status');
    }
  })();
  return nc;
}

/**
 * A connection that is being established in the background. Gateways start serving probes at once and answer 503
 * while NATS is unreachable instead of refusing to start; `close()` also stops a connect loop still trying.
 */
export class LazyNats {
  private nc: NatsConnection | undefined;
  private closed = false;
  readonly ready: Promise<NatsConnection>;
  constructor(
    private readonly url: string,
    private readonly name: string,
    private readonly log: Logger,
  ) {
    this.ready = this.loop();
    this.ready.catch(() => undefined);
  }

  private async loop(): Promise<NatsConnection> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new Error('closed before connecting');
      try {
        const nc = await connect({ servers: this.url.split(','), name: this.name, maxReconnectAttempts: -1, reconnectTimeWait: 1000, reconnectJitter: 500, timeout: 2000 });
        if (this.closed) {
          await nc.close();
          throw new Error('closed before connecting');
        }
        this.nc = nc;
        return nc;
      } catch (err) {
        if (this.closed) throw err;
        if (attempt % 10 === 0) this.log.warn({ err, url: this.url }, 'nats not reachable yet; retrying');
        await new Promise((r) => setTimeout(r, 1000 + Math.random() * 500));
      }
    }
  }

  get current(): NatsConnection | undefined {
    return this.nc && !this.nc.isClosed() ? this.nc : undefined;
  }
  /** Round-trip to the server, bounded; false when disconnected. */
  async healthy(timeoutMs = 1000): Promise<boolean> {
    const nc = this.current;
    if (!nc) return false;
    try {
      await Promise.race([nc.flush(), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), timeoutMs))]);
      return true;
    } catch {
      return false;
    }
  }
  async close(): Promise<void> {
    this.closed = true;
    if (this.nc && !this.nc.isClosed()) await this.nc.drain();
  }
}
