import { fmtCreds, fromSeed, parseCreds } from '@nats-io/jwt';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../platform/logger.ts';
import { AGENT_PING_INTERVAL_MS, failoverOptions } from '../platform/nats-failover.ts';
import { readCredsFile, writeCredsFile } from './state.ts';

/**
 * The agent's NATS credentials, held in memory and kept in step with `agent.creds`. The authenticator asks for them
 * on every (re)connect, so a JWT renewed by a config fetch is used from the next connect on, without a restart.
 */
export class AgentCredentials {
  private readonly stateDir: string;
  private jwt: string;
  private seed: string;
  private creds: Uint8Array;
  private constructor(stateDir: string, jwt: string, seed: string, creds: Uint8Array) {
    this.stateDir = stateDir;
    this.jwt = jwt;
    this.seed = seed;
    this.creds = creds;
  }

  static async load(stateDir: string, log?: Logger): Promise<AgentCredentials> {
    const { bytes, loosened } = await readCredsFile(stateDir);
    if (loosened) log?.warn({ state_dir: stateDir }, 'agent.creds was readable by others; tightened to mode 600');
    const { jwt, key } = await parseCreds(bytes).catch(() => {
      throw new Error(`${stateDir}/agent.creds is not a NATS creds file`);
    });
    return new AgentCredentials(stateDir, jwt, key, bytes);
  }

  /** The creds file bytes the authenticator presents. */
  current(): Uint8Array {
    return this.creds;
  }

  get userJwt(): string {
    return this.jwt;
  }

  /** A new JWT for the same key pair: written to agent.creds (atomically, mode 600), then used from the next connect. */
  async renew(userJwt: string): Promise<void> {
    if (userJwt === this.jwt) return;
    const creds = fmtCreds(userJwt, fromSeed(new TextEncoder().encode(this.seed)));
    await writeCredsFile(this.stateDir, creds);
    this.jwt = userJwt;
    this.creds = creds;
  }

  /** Picks up a creds file replaced by hand (an operator re-issuing credentials); false when it is unusable. */
  async reload(log: Logger): Promise<boolean> {
    try {
      const fresh = await AgentCredentials.load(this.stateDir, log);
      this.jwt = fresh.jwt;
      this.seed = fresh.seed;
      this.creds = fresh.creds;
      return true;
    } catch (err) {
      log.warn({ err }, 'agent.creds could not be read again; keeping the credentials in memory');
      return false;
    }
  }
}

export interface LinkOptions {
  servers: string[];
  /** Connection name shown by the server (`agent-<agent_id>`). */
  name: string;
  /** The only inbox space the agent may subscribe to: replies (config fetch, PubAcks) arrive under it. */
  inboxPrefix: string;
  credentials: AgentCredentials;
  /**
   * The broker's CA (PEM) from enrolment: the only CA trusted for the broker. Without it the system's roots are.
   * Either way the link speaks TLS only: a server that does not offer it is refused, never spoken to in plain text.
   */
  ca?: string;
  log: Logger;
  /** The client's own reconnect pacing while a connection exists (default 2 s + up to 2 s of jitter). */
  reconnectTimeWaitMs?: number;
  reconnectJitterMs?: number;
  pingIntervalMs?: number;
  /** Pacing of fresh connects when there is no connection at all (start without a broker, refused credentials). */
  retryMinMs?: number;
  retryMaxMs?: number;
  connectTimeoutMs?: number;
}

type Listener = () => void;

/**
 * The agent's connection to the broker, established in the background so the agent starts (and buffers) without one.
 * Once connected, the client reconnects by itself forever, with jitter so a fleet does not come back in lock-step.
 * When the client gives up (it aborts after repeated authentication failures, e.g. an expired JWT) the link starts
 * over with fresh connects, backing off up to `retryMaxMs`, reading agent.creds again first.
 */
export class AgentLink {
  private nc: NatsConnection | undefined;
  private up = false;
  private ups = 0;
  private closed = false;
  private wake: (() => void) | undefined;
  private readonly onConnectFns: ((nc: NatsConnection) => void)[] = [];
  private readonly onUpFns: Listener[] = [];
  private readonly loopDone: Promise<void>;

  private readonly opts: LinkOptions;
  constructor(opts: LinkOptions) {
    this.opts = opts;
    this.loopDone = this.loop();
  }

  /** Runs for every new connection object (subscriptions are made here; the client restores them on reconnect). */
  onConnect(fn: (nc: NatsConnection) => void): void {
    this.onConnectFns.push(fn);
    if (this.nc && !this.nc.isClosed()) fn(this.nc);
  }

  /** Runs whenever the broker becomes reachable: first connect and every reconnect. */
  onUp(fn: Listener): void {
    this.onUpFns.push(fn);
  }

  /** The connection while it is up; undefined before the first connect, while reconnecting and after close. */
  get current(): NatsConnection | undefined {
    return this.up && this.nc && !this.nc.isClosed() ? this.nc : undefined;
  }

  get isUp(): boolean {
    return this.current !== undefined;
  }

  /** How many times the broker became reachable (first connect, reconnects). */
  get connects(): number {
    return this.ups;
  }

  private emitUp(): void {
    this.ups++;
    for (const fn of this.onUpFns) {
      try {
        fn();
      } catch (err) {
        this.opts.log.warn({ err }, 'link listener failed');
      }
    }
  }

  private async loop(): Promise<void> {
    const { log } = this.opts;
    const min = this.opts.retryMinMs ?? 1_000;
    const max = this.opts.retryMaxMs ?? 60_000;
    let delay = min;
    for (let attempt = 0; !this.closed; attempt++) {
      let nc: NatsConnection;
      try {
        nc = await connect({
          servers: this.opts.servers,
          name: this.opts.name,
          inboxPrefix: this.opts.inboxPrefix,
          authenticator: credsAuthenticator(() => this.opts.credentials.current()),
          // `ca` replaces Node's default roots for this connection (pinning); `tls` set at all makes TLS required.
          tls: this.opts.ca ? { ca: this.opts.ca } : {},
          maxReconnectAttempts: -1,
          reconnectTimeWait: this.opts.reconnectTimeWaitMs ?? 2_000,
          reconnectJitter: this.opts.reconnectJitterMs ?? 2_000,
          // The client takes this one, not the above, on a TLS connection (the agent's always are).
          reconnectJitterTLS: this.opts.reconnectJitterMs ?? 2_000,
          ...failoverOptions(this.opts.pingIntervalMs ?? AGENT_PING_INTERVAL_MS),
          timeout: this.opts.connectTimeoutMs ?? 5_000,
          noAsyncTraces: true,
        });
      } catch (err) {
        if (this.closed) return;
        if (attempt % 10 === 0)
          log.warn(
            { err: errMessage(err), servers: this.opts.servers, retry_ms: delay },
            'broker not reachable; buffering and retrying',
          );
        await this.sleep(delay + Math.random() * delay);
        delay = Math.min(max, delay * 2);
        // An operator may have dropped in re-issued credentials meanwhile.
        await this.opts.credentials.reload(log);
        continue;
      }
      if (this.closed) {
        await nc.close().catch(() => undefined);
        return;
      }
      const connectedAt = Date.now();
      this.nc = nc;
      for (const fn of this.onConnectFns) fn(nc);
      // The link says it is up once the broker has the subscriptions just made: a command sent at that moment would
      // otherwise find no responder. (A connection lost meanwhile rejects the flush; `current` then says not up.)
      await nc.flush().catch(() => undefined);
      this.up = true;
      log.info({ server: nc.getServer() }, 'connected to the broker');
      this.emitUp();
      void this.watch(nc);
      const err = await nc.closed();
      this.up = false;
      if (this.closed) return;
      log.warn({ err: errMessage(err) }, 'broker connection closed; connecting again');
      // A connection that lasted resets the pacing; one refused at once keeps backing off.
      if (Date.now() - connectedAt > 60_000) delay = min;
      await this.sleep(delay + Math.random() * delay);
      delay = Math.min(max, delay * 2);
      await this.opts.credentials.reload(log);
      attempt = -1;
    }
  }

  private async watch(nc: NatsConnection): Promise<void> {
    const { log } = this.opts;
    try {
      for await (const s of nc.status()) {
        if (s.type === 'disconnect') {
          this.up = false;
          log.warn({ nats: s.type }, 'broker disconnected; buffering and reconnecting');
        } else if (s.type === 'reconnect') {
          this.up = true;
          log.info({ nats: s.type }, 'broker reconnected');
          this.emitUp();
        } else if (s.type === 'error') {
          log.warn({ nats: s.type, err: errMessage(s.error) }, 'broker connection error');
        } else if (s.type === 'close') {
          this.up = false;
        }
      }
    } catch (err) {
      log.warn({ err: errMessage(err) }, 'broker status watcher ended');
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  /** Drains (what is pending goes out, subscriptions end) within `timeoutMs`, then closes outright. */
  async close(timeoutMs = 2_000): Promise<void> {
    this.closed = true;
    this.wake?.();
    const nc = this.nc;
    if (nc && !nc.isClosed()) {
      let timer: NodeJS.Timeout | undefined;
      const drained = this.up
        ? nc.drain().then(
            () => true,
            () => false,
          )
        : Promise.resolve(false);
      const ok = await Promise.race([
        drained,
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
      ]);
      clearTimeout(timer);
      if (!ok) await nc.close().catch(() => undefined);
    }
    // A connect attempt under way ends by its own timeout and then closes what it got; no need to wait for it.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loopDone, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }
}

export function errMessage(err: unknown): string | undefined {
  if (err === undefined || err === null) return undefined;
  if (err instanceof Error)
    return err.cause instanceof Error && !err.message.includes(err.cause.message)
      ? `${err.message}: ${err.cause.message}`
      : err.message;
  return String(err);
}
