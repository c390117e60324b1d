import { randomBytes } from 'node:crypto';
import type { Logger } from '../platform/logger.ts';
import { createLinuxCollector } from './collect/linux.ts';
import type { Collector, FileWatcher, OnFileChanges } from './collect/types.ts';
import { ConfigApplier, ConfigSync, subscribeCommands } from './commands.ts';
import { AgentLink, errMessage, type LinkOptions } from './connection.ts';
import { Outbox, streamSender, type OutboxOptions, type OutboxStats } from './outbox.ts';
import { CollectionRounds } from './rounds.ts';
import { RoundScheduler } from './scheduler.ts';
import { openStateDir, type StateDir } from './state-dir.ts';
import { FileEventBatcher, TelemetryPublisher } from './telemetry.ts';
import { createFileWatcher } from './watch/files.ts';

export interface StartAgentOptions {
  /** Directory holding agent.json and agent.creds (written by `enroll`). */
  stateDir: string;
  /** Heartbeat and metrics batch period (default 10 s). */
  intervalMs?: number;
  /** Inventory snapshot period (default 5 minutes); one is also sent at start. */
  inventoryIntervalMs?: number;
  /** How often integrations are reported with their configuration (default 5 minutes). */
  integrationsConfigIntervalMs?: number;
  /** Facts are read this often (default 1 minute) and sent when they changed, or every `factsResendMs` (5 minutes). */
  factsCheckMs?: number;
  factsResendMs?: number;
  /** Config fetch period once it answered (default 30 minutes). */
  configFetchIntervalMs?: number;
  configRetryMinMs?: number;
  /** File change events are gathered this long (default 1 s, at most 1,000 per batch) before they are sent. */
  eventBatchMs?: number;
  /** How long a publish waits for the stream's ack before it is retried (default 5 s). */
  publishTimeoutMs?: number;
  /** Default: the Linux collector. */
  collector?: Collector;
  /** Default: the file watcher of agent/watch/files.ts. */
  watcher?: (onChanges: OnFileChanges) => FileWatcher | Promise<FileWatcher>;
  log?: Logger;
  /** Check every payload against its schema before sending (default true; the simulator's payloads are checked once). */
  validate?: boolean;
  outbox?: Partial<Pick<OutboxOptions, 'maxMessages' | 'maxBytes' | 'maxInFlight' | 'retryMinMs' | 'retryMaxMs'>>;
  connection?: Partial<
    Pick<
      LinkOptions,
      'reconnectTimeWaitMs' | 'reconnectJitterMs' | 'pingIntervalMs' | 'retryMinMs' | 'retryMaxMs' | 'connectTimeoutMs'
    >
  >;
  /** Delay before the first collection (the simulator spreads a fleet's schedules). Default 0. */
  firstTickDelayMs?: number;
  /**
   * Delay of the first inventory snapshot (default 0: at start). A simulated fleet that stands for agents already
   * running spreads its snapshots over the interval, as a real fleet's would be, instead of sending them all at once.
   */
  firstInventoryDelayMs?: number;
}

export interface AgentStats {
  agent_id: string;
  connected: boolean;
  /** Times the broker became reachable (first connect and reconnects). */
  broker_connects: number;
  config_version: number;
  config_fetches: number;
  ticks: number;
  collect_errors: number;
  invalid_payloads: number;
  outbox: OutboxStats;
}

export interface RunningAgent {
  readonly agentId: string;
  readonly hostId: string;
  readonly stateDir: string;
  readonly connected: boolean;
  /** The broker node it is connected to (`host:port`), undefined while it is not. */
  readonly server: string | undefined;
  /** Version of the watch config in force (0: none). */
  readonly configVersion: number;
  /** Resolves once the first config fetch has been answered and applied. */
  readonly configFetched: Promise<void>;
  stats(): AgentStats;
  /** One heartbeat + metrics round now, outside the schedule. */
  tick(): Promise<void>;
  /** Stops collecting, sends what it can within `timeoutMs` (default 5 s), drains; true when nothing was left. */
  stop(timeoutMs?: number): Promise<boolean>;
}

/**
 * Runs one enrolled agent: connects in the background (collection and buffering start at once, broker or not),
 * applies the saved watch config, fetches its config, listens for commands, and publishes on schedule:
 * - every `intervalMs`: a heartbeat (integration statuses; facts when changed or every 5 minutes; integrations with
 *   config every 5 minutes) and a metrics batch;
 * - at start and every `inventoryIntervalMs`: an inventory snapshot (labels, integrations with config);
 * - file changes, batched for up to `eventBatchMs`.
 */
export async function startAgent(opts: StartAgentOptions): Promise<RunningAgent> {
  const dir = await openStateDir(opts.stateDir, opts.log);
  const { state, log } = dir;
  const intervalMs = opts.intervalMs ?? 10_000;
  const inventoryIntervalMs = opts.inventoryIntervalMs ?? 300_000;
  const collector = opts.collector ?? (await createLinuxCollector());
  const startedAt = Date.now();
  const bootId = `${startedAt.toString(36)}${randomBytes(3).toString('hex')}`;
  const { link, outbox } = openLink(dir, opts);
  const telemetry = new TelemetryPublisher({
    agentId: state.agent_id,
    bootId,
    validate: opts.validate ?? true,
    outbox,
    log,
  });
  const events = new FileEventBatcher((batch) => telemetry.publish('events', batch), opts.eventBatchMs ?? 1_000);
  const watcher = await (opts.watcher ?? createFileWatcher)(events.onChanges);
  const { applier, configSync } = await followConfig(dir, link, watcher, opts);
  const rounds = new CollectionRounds({
    collector,
    publish: (kind, payload) => telemetry.publish(kind, payload),
    waiting: (id) => outbox.has(id),
    labels: state.labels,
    log,
    startedAt,
    inventoryIntervalMs,
    integrationsConfigIntervalMs: opts.integrationsConfigIntervalMs ?? 300_000,
    factsCheckMs: opts.factsCheckMs ?? 60_000,
    factsResendMs: opts.factsResendMs ?? 300_000,
    firstInventoryAt: Date.now() + (opts.firstInventoryDelayMs ?? 0),
  });
  const scheduler = new RoundScheduler(() => rounds.tick(), intervalMs, log);
  scheduler.start(opts.firstTickDelayMs ?? 0);
  log.info(
    {
      servers: state.nats_servers,
      interval_ms: intervalMs,
      inventory_interval_ms: inventoryIntervalMs,
      config_version: applier.version,
    },
    'agent started',
  );

  let stopped = false;
  return {
    agentId: state.agent_id,
    hostId: state.host_id,
    stateDir: opts.stateDir,
    get connected() {
      return link.isUp;
    },
    get server() {
      return link.current?.getServer();
    },
    get configVersion() {
      return applier.version;
    },
    configFetched: configSync.first,
    stats: () => ({
      agent_id: state.agent_id,
      connected: link.isUp,
      broker_connects: link.connects,
      config_version: applier.version,
      config_fetches: configSync.fetches,
      ticks: rounds.ticks,
      collect_errors: rounds.errors,
      invalid_payloads: telemetry.invalidPayloads,
      outbox: outbox.stats(),
    }),
    tick: () => rounds.tick(),
    async stop(timeoutMs = 5_000): Promise<boolean> {
      if (stopped) return outbox.stats().pending === 0;
      stopped = true;
      events.close();
      return stopAgent({ scheduler, configSync, events, watcher, outbox, link, log }, Date.now() + timeoutMs);
    },
  };
}

/** The broker link, and the outbox that sends through it whenever it is up. */
function openLink(dir: StateDir, opts: StartAgentOptions): { link: AgentLink; outbox: Outbox } {
  const link = new AgentLink({
    servers: dir.state.nats_servers,
    name: `agent-${dir.state.agent_id}`,
    inboxPrefix: dir.state.inbox_prefix,
    credentials: dir.credentials,
    ...(dir.ca ? { ca: dir.ca } : {}),
    log: dir.log,
    ...opts.connection,
  });
  const outbox = new Outbox({
    send: streamSender(() => link.current, opts.publishTimeoutMs ?? 5_000),
    ready: () => link.isUp,
    log: dir.log,
    ...opts.outbox,
  });
  link.onUp(() => outbox.resume());
  return { link, outbox };
}

/** The watch config: the saved one applied now, then fetched on schedule and pushed by commands. */
async function followConfig(
  dir: StateDir,
  link: AgentLink,
  watcher: FileWatcher,
  opts: StartAgentOptions,
): Promise<{ applier: ConfigApplier; configSync: ConfigSync }> {
  const { state, log } = dir;
  const applier = new ConfigApplier(dir.path, watcher, log);
  await applier
    .loadSaved()
    .catch((err: unknown) => log.error({ err: errMessage(err) }, 'saved watch config could not be applied'));
  link.onConnect((nc) => subscribeCommands(nc, state.agent_id, applier, log));
  const configSync = new ConfigSync({
    link,
    agentId: state.agent_id,
    applier,
    credentials: dir.credentials,
    log,
    intervalMs: opts.configFetchIntervalMs,
    retryMinMs: opts.configRetryMinMs,
  });
  return { applier, configSync };
}

interface StoppingParts {
  scheduler: RoundScheduler;
  configSync: ConfigSync;
  events: FileEventBatcher;
  watcher: FileWatcher;
  outbox: Outbox;
  link: AgentLink;
  log: Logger;
}

/** Stops collecting, sends what it can until `until`, drains the connection; true when nothing was left. */
async function stopAgent(parts: StoppingParts, until: number): Promise<boolean> {
  const { scheduler, configSync, events, watcher, outbox, link, log } = parts;
  scheduler.stop();
  configSync.stop();
  // A collection round under way finishes first (its messages are worth sending), unless it hangs.
  await Promise.race([
    scheduler.current,
    new Promise((r) => setTimeout(r, Math.max(0, (until - Date.now()) / 2)).unref()),
  ]);
  events.flush();
  await watcher.stop().catch((err: unknown) => log.warn({ err: errMessage(err) }, 'file watcher did not stop cleanly'));
  // Most of the budget goes to getting buffered telemetry stored; the rest to draining the connection.
  const flushed = await outbox.flush(Math.max(0, until - Date.now() - 1_000));
  outbox.close();
  const left = outbox.stats();
  if (!flushed)
    log.warn({ pending: left.pending }, 'stopping with telemetry not yet stored (lost: the outbox is in memory)');
  await link.close(Math.max(200, until - Date.now()));
  log.info('agent stopped');
  return flushed;
}
