import type { z } from 'zod';
import type { IntegrationReport, TelemetryKind } from '../contracts/domains/agent-telemetry.ts';
import type { Logger } from '../platform/logger.ts';
import type { Collector } from './collect/types.ts';
import { errMessage } from './connection.ts';
import { HeartbeatBuilder } from './heartbeat.ts';
import { AGENT_VERSION } from './version.ts';

export interface CollectionRoundsOptions {
  collector: Collector;
  /** Queues one message; its `Nats-Msg-Id`, or undefined when it was not queued. */
  publish: (kind: TelemetryKind, payload: unknown) => string | undefined;
  /** Whether a queued message has not been sent yet. */
  waiting: (id: string) => boolean;
  /** The labels of agent.json, sent with a snapshot whose collector set none. */
  labels: Record<string, string>;
  log: Logger;
  startedAt: number;
  inventoryIntervalMs: number;
  integrationsConfigIntervalMs: number;
  factsCheckMs: number;
  factsResendMs: number;
  /** When the first inventory snapshot is due. */
  firstInventoryAt: number;
}

/** One collection round: a heartbeat, a metrics batch, and the inventory snapshot when it is due. */
export class CollectionRounds {
  private rounds = 0;
  private collectErrors = 0;
  private inventoryDueAt: number;
  private readonly heartbeats: HeartbeatBuilder;

  private readonly opts: CollectionRoundsOptions;
  constructor(opts: CollectionRoundsOptions) {
    this.opts = opts;
    this.inventoryDueAt = opts.firstInventoryAt;
    this.heartbeats = new HeartbeatBuilder({
      collector: opts.collector,
      collect: (what, fn) => this.collect(what, fn),
      startedAt: opts.startedAt,
      factsCheckMs: opts.factsCheckMs,
      factsResendMs: opts.factsResendMs,
      integrationsConfigIntervalMs: opts.integrationsConfigIntervalMs,
    });
  }

  /** Rounds begun. */
  get ticks(): number {
    return this.rounds;
  }

  /** Collections that failed (each skipped for its round). */
  get errors(): number {
    return this.collectErrors;
  }

  async tick(): Promise<void> {
    this.rounds++;
    const now = Date.now();
    const built = await this.heartbeats.build(now, this.opts.waiting);
    const id = this.opts.publish('heartbeat', built.heartbeat);
    if (id) this.heartbeats.queued(id, built);

    const metrics = await this.collect('metrics', () => this.opts.collector.metrics());
    if (metrics && metrics.samples.length > 0) this.opts.publish('metrics', metrics);

    if (now >= this.inventoryDueAt) {
      this.inventoryDueAt = now + this.opts.inventoryIntervalMs;
      await this.sendInventory();
    }
  }

  private async sendInventory(): Promise<void> {
    const { collector, labels } = this.opts;
    const snapshot = await this.collect('inventory', () => collector.inventory(labels));
    if (!snapshot) return;
    const withIntegrations: z.input<typeof IntegrationReport>[] | undefined = snapshot.integrations?.length
      ? snapshot.integrations
      : this.heartbeats.integrationsWithConfig;
    this.opts.publish('inventory', {
      ...snapshot,
      agent_version: AGENT_VERSION,
      labels: snapshot.labels ?? labels,
      integrations: withIntegrations ?? [],
    });
  }

  private async collect<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (err) {
      this.collectErrors++;
      this.opts.log.warn({ err: errMessage(err), what }, 'collection failed; skipped this round');
      return undefined;
    }
  }
}
