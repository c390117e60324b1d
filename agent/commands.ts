import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  AgentReply,
  agentCommandSubject,
  agentConfigSubject,
  ConfigFetchReply,
  ConfigUpdateCommand,
  type WatchFilesConfig,
} from '../contracts/domains/agent-telemetry.ts';
import { describeZodError } from '../contracts/errors.ts';
import type { Logger } from '../platform/logger.ts';
import type { AgentCredentials, AgentLink } from './connection.ts';
import { errMessage } from './connection.ts';
import type { FileWatcher } from './collect/types.ts';
import { readWatchConfig, writeWatchConfig } from './state.ts';

/**
 * The watch config the agent runs with. A config (from a command or a fetch reply) is applied only when its version
 * is newer than the one held: saved to config/watch_files.json first (so a restart comes back with it), then handed
 * to the watcher. Applies run one at a time, so a command and a fetch reply arriving together cannot interleave.
 */
export class ConfigApplier {
  private held = 0;
  private chain: Promise<unknown> = Promise.resolve();

  private readonly stateDir: string;
  private readonly watcher: FileWatcher;
  private readonly log: Logger;
  constructor(stateDir: string, watcher: FileWatcher, log: Logger) {
    this.stateDir = stateDir;
    this.watcher = watcher;
    this.log = log;
  }

  get version(): number {
    return this.held;
  }

  /** At start, before any fetch answers: the config saved by the previous run. */
  loadSaved(): Promise<void> {
    return this.serial(async () => {
      let saved;
      try {
        saved = await readWatchConfig(this.stateDir);
      } catch (err) {
        this.log.warn({ err: errMessage(err) }, 'saved watch config ignored; waiting for the config fetch');
        return;
      }
      if (!saved) return;
      this.held = saved.version;
      await this.watcher.apply(saved.payload);
      this.log.info({ version: saved.version }, 'saved watch config applied');
    });
  }

  /** True when the config was newer and is now applied; false when the agent already had it (or a newer one). */
  apply(version: number, payload: WatchFilesConfig, source: 'command' | 'fetch'): Promise<boolean> {
    return this.serial(async () => {
      if (version <= this.held) return false;
      await writeWatchConfig(this.stateDir, { version, payload });
      this.held = version;
      await this.watcher.apply(payload);
      this.log.info({ version, source, paths: payload.paths.length }, 'watch config applied');
      return true;
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }
}

const encoder = new TextEncoder();
const replyOk = encoder.encode(JSON.stringify({ ok: true }));
const replyError = (code: string, message: string): Uint8Array =>
  encoder.encode(JSON.stringify({ ok: false, error: { code, message } }));

/** Commands on `svc.system.commands.<agent_id>`: a config_update is applied; a request is answered. */
export function subscribeCommands(
  nc: NatsConnection,
  agentId: string,
  applier: ConfigApplier,
  log: Logger,
): Subscription {
  const sub = nc.subscribe(agentCommandSubject(agentId), {
    callback: (err, msg) => {
      if (err) {
        log.error({ err: errMessage(err) }, 'command subscription failed');
        return;
      }
      void handleCommand(msg, applier, log);
    },
  });
  sub.closed
    .then((err) => {
      if (err) log.error({ err: errMessage(err) }, 'command subscription closed');
    })
    .catch(() => undefined);
  return sub;
}

async function handleCommand(msg: Msg, applier: ConfigApplier, log: Logger): Promise<void> {
  const respond = (data: Uint8Array): void => {
    if (!msg.reply) return;
    try {
      msg.respond(data);
    } catch (err) {
      log.warn({ err: errMessage(err) }, 'command reply failed');
    }
  };
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(msg.data));
  } catch {
    log.warn('command is not JSON; ignored');
    respond(replyError('bad_request', 'command is not JSON'));
    return;
  }
  const parsed = ConfigUpdateCommand.safeParse(json);
  if (!parsed.success) {
    const message = describeZodError(parsed.error);
    log.warn({ reason: message }, 'invalid command ignored');
    respond(replyError('bad_request', message));
    return;
  }
  const cmd = parsed.data;
  try {
    await applier.apply(cmd.version, cmd.payload, 'command');
    respond(replyOk);
  } catch (err) {
    log.error({ err: errMessage(err), version: cmd.version }, 'config command could not be applied');
    respond(replyError('apply_failed', errMessage(err) ?? 'apply failed'));
  }
}

const FetchReply = AgentReply(ConfigFetchReply);

/** One config fetch: the reply's data, or an error naming what went wrong. */
export async function fetchConfig(nc: NatsConnection, agentId: string, timeoutMs: number): Promise<ConfigFetchReply> {
  const msg = await nc.request(agentConfigSubject(agentId), encoder.encode('{}'), { timeout: timeoutMs });
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(msg.data));
  } catch {
    throw new Error('config fetch reply is not JSON');
  }
  const parsed = FetchReply.safeParse(json);
  if (!parsed.success) throw new Error(`config fetch reply is malformed: ${describeZodError(parsed.error)}`);
  if (!parsed.data.ok) throw new Error(`config fetch refused: ${parsed.data.error.code}: ${parsed.data.error.message}`);
  return parsed.data.data;
}

export interface ConfigSyncOptions {
  link: AgentLink;
  agentId: string;
  applier: ConfigApplier;
  credentials: AgentCredentials;
  log: Logger;
  /** Between successful fetches (default 30 minutes, ±10 % so a fleet spreads out). */
  intervalMs?: number;
  /** Backoff of a fetch that got no answer: from `retryMinMs` doubling up to `retryMaxMs`. */
  retryMinMs?: number;
  retryMaxMs?: number;
  timeoutMs?: number;
  /** After a reconnect, fetch again within this window (a command sent while the agent was away was missed). */
  reconnectSpreadMs?: number;
}

/**
 * Fetches the agent's config at start — retrying with backoff until it answers, while telemetry is already being
 * collected — then every `intervalMs`, and again shortly after every reconnect. A reply's configs are applied like
 * commands; credentials in it replace agent.creds and are used from the next (re)connect.
 */
export class ConfigSync {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = false;
  private failures = 0;
  private fetched = 0;
  private readonly firstDone: Promise<void>;
  private resolveFirst!: () => void;

  private readonly opts: ConfigSyncOptions;
  constructor(opts: ConfigSyncOptions) {
    this.opts = opts;
    this.firstDone = new Promise((r) => (this.resolveFirst = r));
    opts.link.onUp(() => {
      if (this.fetched === 0) this.schedule(0);
      else this.schedule(Math.random() * (opts.reconnectSpreadMs ?? 10_000));
    });
    this.schedule(0);
  }

  /** Resolves once a fetch has been answered and applied. */
  get first(): Promise<void> {
    return this.firstDone;
  }

  get fetches(): number {
    return this.fetched;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, delayMs);
  }

  /** Fetches now (tests, or after a command says the config moved on). */
  async fetchNow(): Promise<void> {
    await this.run();
  }

  private async run(): Promise<void> {
    if (this.running || this.stopped) return;
    const nc = this.opts.link.current;
    // Nothing to ask while disconnected: the link's next "up" schedules the fetch.
    if (!nc) return;
    this.running = true;
    const { log } = this.opts;
    try {
      const reply = await fetchConfig(nc, this.opts.agentId, this.opts.timeoutMs ?? 5_000);
      await this.applyReply(reply);
      this.failures = 0;
      this.fetched++;
      this.resolveFirst();
      const interval = this.opts.intervalMs ?? 30 * 60_000;
      this.schedule(interval * (0.9 + Math.random() * 0.2));
    } catch (err) {
      const min = this.opts.retryMinMs ?? 1_000;
      const max = this.opts.retryMaxMs ?? 60_000;
      const delay = Math.min(max, min * 2 ** Math.min(this.failures, 16));
      this.failures++;
      if (this.failures === 1 || this.failures % 10 === 0)
        log.warn({ err: errMessage(err), retry_ms: delay, attempts: this.failures }, 'config fetch failed; retrying');
      this.schedule(delay / 2 + Math.random() * (delay / 2));
    } finally {
      this.running = false;
    }
  }

  private async applyReply(reply: ConfigFetchReply): Promise<void> {
    const { log } = this.opts;
    if (reply.agent_id !== this.opts.agentId)
      throw new Error(`config fetch answered for another agent (${reply.agent_id})`);
    if (reply.credentials) {
      await this.opts.credentials.renew(reply.credentials.user_jwt);
      log.info({ expires_at: reply.credentials.expires_at }, 'broker credentials renewed; used from the next connect');
    }
    const watch = reply.configs.filter((c) => c.config_type === 'watch_files').sort((a, b) => b.version - a.version)[0];
    if (watch) await this.opts.applier.apply(watch.version, watch.payload, 'fetch');
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.resolveFirst();
  }
}
