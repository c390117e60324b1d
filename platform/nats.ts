import { connect, credsAuthenticator, type ConnectionOptions, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import type { Logger } from './logger.ts';
import { convergingLeastRecentlyDialed, failoverOptions, SERVICE_PING_INTERVAL_MS } from './nats-failover.ts';

/**
 * Reconnect forever, with jitter so a fleet of processes does not reconnect in lock-step; leave a silent or dead node
 * for another within seconds (nats-failover.ts). No async traces: the client would otherwise allocate an Error (with
 * a captured stack) for every request it sends, a measurable share of the per-request CPU (docs/benchmarks.md); our
 * errors name the subject instead.
 */
const RECONNECT: Partial<ConnectionOptions> = {
  noAsyncTraces: true,
  maxReconnectAttempts: -1,
  reconnectTimeWait: 1000,
  reconnectJitter: 500,
  reconnectJitterTLS: 500,
  ...failoverOptions(SERVICE_PING_INTERVAL_MS, convergingLeastRecentlyDialed),
};

/**
 * Authentication with a standard NATS creds file (user JWT + nkey seed). The file is read again on every
 * (re)connect, so replacing it rotates the credentials without a restart. No file: no authentication (a server that
 * needs it refuses the connection).
 */
export function brokerAuth(credsPath: string | undefined): Partial<ConnectionOptions> {
  return credsPath ? { authenticator: credsAuthenticator(() => readFileSync(credsPath)) } : {};
}

/**
 * TLS towards the broker: with a CA file (SVC_NATS_CA) the server must present a certificate chaining to it, and the
 * client refuses a server that does not offer TLS. Without one, a server that requires TLS is still spoken to over
 * TLS, verified against the system's roots (an operator's publicly signed certificate). The file is read on every
 * (re)connect, so a rotated CA bundle is picked up without a restart.
 */
export function brokerTls(caPath: string | undefined): Partial<ConnectionOptions> {
  return caPath ? { tls: { caFile: caPath } } : {};
}

/** How long `close()` lets a drain run (it cannot finish while the server is unreachable) before closing outright. */
const DRAIN_TIMEOUT_MS = 5_000;

/**
 * Connects and keeps reconnecting forever. `waitOnFirstConnect` lets a process start while NATS is still down: the
 * promise settles once a server answers.
 */
export async function connectNats(
  url: string,
  name: string,
  log: Logger,
  credsPath?: string,
  caPath?: string,
): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    ...RECONNECT,
    ...brokerAuth(credsPath),
    ...brokerTls(caPath),
    waitOnFirstConnect: true,
  });
  watchStatus(nc, log, () => undefined);
  batchWrites(nc);
  return nc;
}

/** What batchWrites touches of nats.js's protocol handler (nats-core 3.x, pinned in package-lock.json). */
interface Protocol {
  flushPending: () => void;
  close: (err?: Error) => Promise<void>;
  outbound: { size: () => number };
  pendingLimit: number;
}

/**
 * nats.js writes its outbound buffer once the current microtask queue is empty, so every HTTP request (each its own
 * socket callback) costs a write(2) of ours, and a read and a delivery of nats-server's, per message. Flushing once per
 * event-loop turn (setImmediate) sends in one write what all of a turn's callbacks published, which saves nats-server
 * a read and a delivery per message (docs/benchmarks.md) at no latency cost (the turn's poll phase is already over).
 * Order is unchanged (one FIFO buffer); `close` writes what is still buffered first, as the microtask flush did.
 */
export function batchWrites(nc: NatsConnection): void {
  const proto = (nc as unknown as { protocol?: Partial<Protocol> }).protocol;
  // Another nats.js release without these: keep its own flushing rather than break the connection.
  if (
    typeof proto?.flushPending !== 'function' ||
    typeof proto.close !== 'function' ||
    typeof proto.outbound?.size !== 'function'
  )
    return;
  const buffered = proto.outbound;
  const limit = (): number => proto.pendingLimit ?? 32 * 1024;
  const flushNow = proto.flushPending.bind(proto);
  const close = proto.close.bind(proto);
  let scheduled: NodeJS.Immediate | undefined;
  const flush = (): void => {
    scheduled = undefined;
    flushNow();
  };
  let closing = false;
  proto.flushPending = () => {
    // A full buffer (the client's own threshold) goes at once, as before: a burst of large messages is not held. So
    // does everything once the connection is closing: the socket may be gone by the next turn.
    if (closing || buffered.size() >= limit()) {
      if (scheduled) clearImmediate(scheduled);
      flush();
    } else scheduled ??= setImmediate(flush);
  };
  proto.close = (err?: Error) => {
    closing = true;
    if (scheduled) clearImmediate(scheduled);
    // What was published before close() and is still buffered (its flush may not even be scheduled yet).
    flush();
    return close(err);
  };
}

function watchStatus(nc: NatsConnection, log: Logger, connected: (up: boolean) => void): void {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        connected(false);
        log.warn({ nats: s.type, server: s.server }, 'nats disconnected; reconnecting');
      } else if (s.type === 'reconnect') {
        connected(true);
        log.info({ nats: s.type, server: s.server }, 'nats reconnected');
      } else if (s.type === 'error' || s.type === 'staleConnection' || s.type === 'slowConsumer') {
        log.warn({ nats: s.type }, 'nats connection status');
      } else if (s.type === 'close') {
        connected(false);
      }
    }
  })().catch((err: unknown) => log.warn({ err }, 'nats status watcher ended'));
}

/** Drains `nc` (flushes what is pending, ends subscriptions), bounded: a connection that cannot drain is closed. */
export async function closeNats(nc: NatsConnection, log: Logger, timeoutMs = DRAIN_TIMEOUT_MS): Promise<void> {
  if (nc.isClosed()) return;
  let timer: NodeJS.Timeout | undefined;
  const drained = nc.drain().then(
    () => true,
    () => false,
  );
  const ok = await Promise.race([
    drained,
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (!ok) {
    log.warn('nats drain did not finish; closing the connection');
    await nc.close().catch(() => undefined);
  }
}

/**
 * A connection that is being established in the background. Gateways start serving probes at once and answer 503
 * while NATS is unreachable instead of refusing to start; `close()` also stops a connect loop still trying.
 * Once connected, the client reconnects by itself forever; while it is disconnected `current` is undefined, so
 * callers answer `unavailable` at once instead of waiting for their deadline.
 */
export class LazyNats {
  private nc: NatsConnection | undefined;
  private closed = false;
  private connected = false;
  private readonly reconnected: (() => void)[] = [];
  readonly ready: Promise<NatsConnection>;
  private readonly url: string;
  private readonly name: string;
  private readonly log: Logger;
  private readonly credsPath?: string;
  private readonly caPath?: string;
  constructor(url: string, name: string, log: Logger, credsPath?: string, caPath?: string) {
    this.url = url;
    this.name = name;
    this.log = log;
    this.credsPath = credsPath;
    this.caPath = caPath;
    this.ready = this.loop();
    this.ready.catch(() => undefined);
  }

  private async loop(): Promise<NatsConnection> {
    for (let attempt = 0; ; attempt++) {
      if (this.closed) throw new Error('closed before connecting');
      try {
        const nc = await connect({
          servers: this.url.split(','),
          name: this.name,
          ...RECONNECT,
          ...brokerAuth(this.credsPath),
          ...brokerTls(this.caPath),
        });
        if (this.closed) {
          await nc.close();
          throw new Error('closed before connecting');
        }
        batchWrites(nc);
        this.nc = nc;
        this.connected = true;
        watchStatus(nc, this.log, (up) => {
          this.connected = up;
          if (up) for (const fn of this.reconnected) fn();
        });
        if (attempt > 0) this.log.info({ url: this.url, attempts: attempt + 1 }, 'nats connected');
        return nc;
      } catch (err) {
        if (this.closed) throw err;
        if (attempt % 10 === 0) this.log.warn({ err, url: this.url }, 'nats not reachable yet; retrying');
        await new Promise((r) => setTimeout(r, 1000 + Math.random() * 500));
      }
    }
  }

  /** Runs `fn` each time the client is connected again (to any node of the cluster) after losing its connection. */
  onReconnect(fn: () => void): void {
    this.reconnected.push(fn);
  }

  /** The connection while it is up; undefined before the first connect, while reconnecting, and after close. */
  get current(): NatsConnection | undefined {
    return this.nc && this.connected && !this.nc.isClosed() ? this.nc : undefined;
  }

  /**
   * Round-trip to the server, bounded; false when disconnected. The verdict "no answer" waits for the event loop's next
   * check phase: after a stall of this process (a long synchronous task) the timer is due before the socket is read,
   * and a PONG already received must count, or a busy gateway would call a healthy broker silent (and open its breaker).
   */
  async healthy(timeoutMs = 1000): Promise<boolean> {
    const nc = this.current;
    if (!nc) return false;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        nc.flush(),
        new Promise((_, rej) => (timer = setTimeout(() => setImmediate(() => rej(new Error('timeout'))), timeoutMs))),
      ]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.nc) await closeNats(this.nc, this.log);
  }
}
