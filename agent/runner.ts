import { randomBytes } from 'node:crypto';
import type { z } from 'zod';
import {
  AgentEventBatch,
  Heartbeat,
  InventorySnapshot,
  MetricBatch,
  type IntegrationReport,
  type MetricBatchIn,
  type TelemetryKind,
} from '../contracts/domains/agent-telemetry.ts';
import { encodeCompactMetricBatch } from '../contracts/domains/metric-wire.ts';
import { describeZodError } from '../contracts/errors.ts';
import { telemetrySubject } from '../contracts/streams.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { createLinuxCollector } from './collect/linux.ts';
import type { Collector, FileChangeIn, FileWatcher, OnFileChanges } from './collect/types.ts';
import { ConfigApplier, ConfigSync, subscribeCommands } from './commands.ts';
import { AgentCredentials, AgentLink, errMessage, type LinkOptions } from './connection.ts';
import { Outbox, streamSender, type OutboxOptions, type OutboxStats } from './outbox.ts';
import { readAgentState, readBrokerCa } from './state.ts';
import { AGENT_VERSION } from './version.ts';
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

const encoder = new TextEncoder();
const SCHEMAS: Record<TelemetryKind, z.ZodType> = {
  heartbeat: Heartbeat,
  inventory: InventorySnapshot,
  metrics: MetricBatch,
  events: AgentEventBatch,
};
const MAX_EVENTS_PER_BATCH = 1_000;

/**
 * Runs one enrolled agent: connects in the background (collection and buffering start at once, broker or not),
 * applies the saved watch config, fetches its config, listens for commands, and publishes on schedule:
 * - every `intervalMs`: a heartbeat (integration statuses; facts when changed or every 5 minutes; integrations with
 *   config every 5 minutes) and a metrics batch;
 * - at start and every `inventoryIntervalMs`: an inventory snapshot (labels, integrations with config);
 * - file changes, batched for up to `eventBatchMs`.
 */
export async function startAgent(opts: StartAgentOptions): Promise<RunningAgent> {
  const state = await readAgentState(opts.stateDir);
  const log = (opts.log ?? createLogger(undefined, 'agent')).child({ agent_id: state.agent_id });
  const credentials = await AgentCredentials.load(opts.stateDir, log);
  const ca = await readBrokerCa(opts.stateDir);
  const intervalMs = opts.intervalMs ?? 10_000;
  const inventoryIntervalMs = opts.inventoryIntervalMs ?? 300_000;
  const integrationsConfigIntervalMs = opts.integrationsConfigIntervalMs ?? 300_000;
  const factsCheckMs = opts.factsCheckMs ?? 60_000;
  const factsResendMs = opts.factsResendMs ?? 300_000;
  const eventBatchMs = opts.eventBatchMs ?? 1_000;
  const validate = opts.validate ?? true;
  const collector = opts.collector ?? (await createLinuxCollector());

  const startedAt = Date.now();
  const bootId = `${startedAt.toString(36)}${randomBytes(3).toString('hex')}`;
  let seq = 0;
  let stopped = false;
  let ticks = 0;
  let collectErrors = 0;
  let invalidPayloads = 0;

  const link = new AgentLink({
    servers: state.nats_servers,
    name: `agent-${state.agent_id}`,
    inboxPrefix: state.inbox_prefix,
    credentials,
    ...(ca ? { ca } : {}),
    log,
    ...opts.connection,
  });
  const outbox = new Outbox({
    send: streamSender(() => link.current, opts.publishTimeoutMs ?? 5_000),
    ready: () => link.isUp,
    log,
    ...opts.outbox,
  });
  link.onUp(() => outbox.resume());

  /** Queues one message; its `Nats-Msg-Id`, or undefined when it was not queued. */
  function publish(kind: TelemetryKind, payload: unknown): string | undefined {
    // A metric batch is encoded as the schema gives it back (what the ingest would make of it as JSON).
    let checked: unknown = payload;
    if (validate) {
      const parsed = SCHEMAS[kind].safeParse(payload);
      if (!parsed.success) {
        invalidPayloads++;
        log.error(
          { kind, reason: describeZodError(parsed.error) },
          'collected payload does not match its schema; not sent',
        );
        return undefined;
      }
      checked = parsed.data;
    }
    const id = `${state.agent_id}:${kind}:${bootId}-${(seq++).toString(36)}`;
    // Metric batches in the compact form (contracts/domains/metric-wire.ts: a seventh of the bytes); the rest as JSON.
    let data: Uint8Array;
    try {
      data =
        kind === 'metrics'
          ? encodeCompactMetricBatch(checked as MetricBatchIn)
          : encoder.encode(JSON.stringify(payload));
    } catch (err) {
      invalidPayloads++;
      log.error({ kind, reason: errMessage(err) }, 'collected payload could not be encoded; not sent');
      return undefined;
    }
    return outbox.add({ id, kind, subject: telemetrySubject(state.agent_id, kind), data }) ? id : undefined;
  }

  // File changes: gathered briefly so a burst (a package upgrade) becomes a few batches, not thousands of messages.
  let pendingEvents: FileChangeIn[] = [];
  let eventTimer: NodeJS.Timeout | undefined;
  const flushEvents = (): void => {
    if (eventTimer) clearTimeout(eventTimer);
    eventTimer = undefined;
    const events = pendingEvents;
    pendingEvents = [];
    for (let i = 0; i < events.length; i += MAX_EVENTS_PER_BATCH)
      publish('events', { events: events.slice(i, i + MAX_EVENTS_PER_BATCH) });
  };
  const onChanges: OnFileChanges = (events) => {
    if (stopped || events.length === 0) return;
    pendingEvents.push(...events);
    if (pendingEvents.length >= MAX_EVENTS_PER_BATCH) flushEvents();
    else eventTimer ??= setTimeout(flushEvents, eventBatchMs);
  };

  const watcher = await (opts.watcher ?? createFileWatcher)(onChanges);
  const applier = new ConfigApplier(opts.stateDir, watcher, log);
  await applier
    .loadSaved()
    .catch((err: unknown) => log.error({ err: errMessage(err) }, 'saved watch config could not be applied'));
  link.onConnect((nc) => subscribeCommands(nc, state.agent_id, applier, log));
  const configSync = new ConfigSync({
    link,
    agentId: state.agent_id,
    applier,
    credentials,
    log,
    intervalMs: opts.configFetchIntervalMs,
    retryMinMs: opts.configRetryMinMs,
  });

  // What the schedule remembers between rounds.
  let factsCheckedAt = -Infinity;
  let factsSentAt = -Infinity;
  let factsKey = '';
  let integrationsConfigAt = -Infinity;
  let integrationsWithConfig: z.input<typeof Heartbeat>['integrations'];
  let inventoryDueAt = Date.now() + (opts.firstInventoryDelayMs ?? 0);
  let lastHeartbeat:
    | {
        id: string;
        facts: z.input<typeof Heartbeat>['facts'];
        integrations: z.input<typeof Heartbeat>['integrations'];
        withConfig: boolean;
      }
    | undefined;

  async function collect<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      collectErrors++;
      log.warn({ err: errMessage(err), what }, 'collection failed; skipped this round');
      return undefined;
    }
  }

  async function tick(): Promise<void> {
    ticks++;
    const now = Date.now();
    const heartbeat: z.input<typeof Heartbeat> = {
      sent_at: new Date(now).toISOString(),
      agent_version: AGENT_VERSION,
      uptime_seconds: Math.floor((now - startedAt) / 1000),
    };
    if (now - factsCheckedAt >= factsCheckMs) {
      const facts = await collect('facts', () => collector.facts());
      if (facts) {
        factsCheckedAt = now;
        const key = JSON.stringify(facts);
        if (key !== factsKey || now - factsSentAt >= factsResendMs) {
          heartbeat.facts = facts;
          factsKey = key;
          factsSentAt = now;
        }
      }
    }
    const withConfig = now - integrationsConfigAt >= integrationsConfigIntervalMs;
    const integrations = await collect('integrations', () => collector.integrations(withConfig));
    if (integrations) {
      heartbeat.integrations = integrations;
      if (withConfig) {
        integrationsConfigAt = now;
        integrationsWithConfig = integrations;
      }
    }
    // A heartbeat still waiting (the broker is away) is replaced by this one: what only it carried comes along.
    if (lastHeartbeat && outbox.has(lastHeartbeat.id)) {
      heartbeat.facts ??= lastHeartbeat.facts;
      if (lastHeartbeat.withConfig && !withConfig) heartbeat.integrations = lastHeartbeat.integrations;
    }
    const id = publish('heartbeat', heartbeat);
    if (id)
      lastHeartbeat = {
        id,
        facts: heartbeat.facts,
        integrations: heartbeat.integrations,
        withConfig: withConfig || lastHeartbeat?.withConfig === true,
      };

    const metrics = await collect('metrics', () => collector.metrics());
    if (metrics && metrics.samples.length > 0) publish('metrics', metrics);

    if (now >= inventoryDueAt) {
      inventoryDueAt = now + inventoryIntervalMs;
      const snapshot = await collect('inventory', () => collector.inventory(state.labels));
      if (snapshot) {
        const withIntegrations: z.input<typeof IntegrationReport>[] | undefined = snapshot.integrations?.length
          ? snapshot.integrations
          : integrationsWithConfig;
        publish('inventory', {
          ...snapshot,
          agent_version: AGENT_VERSION,
          labels: snapshot.labels ?? state.labels,
          integrations: withIntegrations ?? [],
        });
      }
    }
  }

  let tickTimer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> = Promise.resolve();
  const schedule = (delayMs: number): void => {
    if (stopped) return;
    tickTimer = setTimeout(() => {
      const began = Date.now();
      ticking = tick()
        .catch((err: unknown) => log.error({ err: errMessage(err) }, 'collection round failed'))
        .finally(() => schedule(Math.max(0, began + intervalMs - Date.now())));
    }, delayMs);
  };
  schedule(opts.firstTickDelayMs ?? 0);
  log.info(
    {
      servers: state.nats_servers,
      interval_ms: intervalMs,
      inventory_interval_ms: inventoryIntervalMs,
      config_version: applier.version,
    },
    'agent started',
  );

  return {
    agentId: state.agent_id,
    hostId: state.host_id,
    stateDir: opts.stateDir,
    get connected() {
      return link.isUp;
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
      ticks,
      collect_errors: collectErrors,
      invalid_payloads: invalidPayloads,
      outbox: outbox.stats(),
    }),
    tick,
    async stop(timeoutMs = 5_000): Promise<boolean> {
      if (stopped) return outbox.stats().pending === 0;
      stopped = true;
      const until = Date.now() + timeoutMs;
      if (tickTimer) clearTimeout(tickTimer);
      configSync.stop();
      // A collection round under way finishes first (its messages are worth sending), unless it hangs.
      await Promise.race([ticking, new Promise((r) => setTimeout(r, Math.max(0, (until - Date.now()) / 2)).unref())]);
      flushEvents();
      await watcher
        .stop()
        .catch((err: unknown) => log.warn({ err: errMessage(err) }, 'file watcher did not stop cleanly'));
      // Most of the budget goes to getting buffered telemetry stored; the rest to draining the connection.
      const flushed = await outbox.flush(Math.max(0, until - Date.now() - 1_000));
      outbox.close();
      const left = outbox.stats();
      if (!flushed)
        log.warn({ pending: left.pending }, 'stopping with telemetry not yet stored (lost: the outbox is in memory)');
      await link.close(Math.max(200, until - Date.now()));
      log.info('agent stopped');
      return flushed;
    },
  };
}
