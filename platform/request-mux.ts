import {
  createInbox,
  NoRespondersError,
  TimeoutError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
} from '@nats-io/transport-node';

interface Pending {
  resolve: (data: Uint8Array) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  subject: string;
}

/** The connection ended (closed or drained) with the request unanswered. */
export class ConnectionGoneError extends Error {
  constructor() {
    super('connection closed before the reply');
    this.name = 'ConnectionGone';
  }
}

/**
 * Request-reply over one inbox subscription per connection, as nats.js's own `request` does, without its per-request
 * extras on the hot path (an Error with a captured stack built for every request, even answered ones, when it
 * settles; a deferred and a timer promise of its own): each request costs one map entry and one timer. Replies and
 * the server's no-responders status arrive on `<inbox>.<token>`; a reply for a token no longer waited for (timed out,
 * repeated) is dropped.
 */
export class RequestMux {
  private readonly pending = new Map<string, Pending>();
  private readonly prefix: string;
  private next = 0;

  private readonly nc: NatsConnection;
  private constructor(nc: NatsConnection) {
    this.nc = nc;
    const inboxPrefix = (nc as NatsConnection & { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
    this.prefix = createInbox(inboxPrefix);
    const sub = nc.subscribe(`${this.prefix}.*`, {
      callback: (err, msg) => (err ? this.failAll(err) : this.settle(msg)),
    });
    void sub.closed.then(
      () => this.failAll(new ConnectionGoneError()),
      (err: unknown) => this.failAll(err instanceof Error ? err : new ConnectionGoneError()),
    );
  }

  private static readonly muxes = new WeakMap<NatsConnection, RequestMux>();

  /** The connection's mux, made on first use. */
  static of(nc: NatsConnection): RequestMux {
    let mux = RequestMux.muxes.get(nc);
    if (!mux) {
      mux = new RequestMux(nc);
      RequestMux.muxes.set(nc, mux);
    }
    return mux;
  }

  /** Resolves with the reply's payload; rejects with TimeoutError, NoRespondersError or ConnectionGoneError. */
  request(subject: string, payload: Uint8Array, opts: { timeout: number; headers?: MsgHdrs }): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const token = (this.next++).toString(36);
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(new TimeoutError());
      }, opts.timeout);
      this.pending.set(token, { resolve, reject, timer, subject });
      try {
        this.nc.publish(subject, payload, {
          reply: `${this.prefix}.${token}`,
          ...(opts.headers ? { headers: opts.headers } : {}),
        });
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(token);
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  private settle(msg: Msg): void {
    const token = msg.subject.slice(this.prefix.length + 1);
    const p = this.pending.get(token);
    if (!p) return;
    this.pending.delete(token);
    clearTimeout(p.timer);
    if (msg.data.length === 0 && msg.headers?.code === 503) p.reject(new NoRespondersError(p.subject));
    else p.resolve(msg.data);
  }

  private failAll(err: Error): void {
    for (const [token, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(token);
      p.reject(err);
    }
  }
}
