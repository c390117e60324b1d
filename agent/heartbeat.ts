import type { z } from 'zod';
import type { Heartbeat } from '../contracts/domains/agent-telemetry.ts';
import type { Collector } from './collect/types.ts';
import { AGENT_VERSION } from './version.ts';

type HeartbeatIn = z.input<typeof Heartbeat>;

/** Runs one collection; undefined when it failed (counted and logged by the caller's wrapper). */
export type Collect = <T>(what: string, fn: () => Promise<T>) => Promise<T | undefined>;

export interface HeartbeatBuilderOptions {
  collector: Pick<Collector, 'facts' | 'integrations'>;
  collect: Collect;
  /** When the agent started: the heartbeat's uptime counts from here. */
  startedAt: number;
  /** Facts are read this often and sent when they changed, or every `factsResendMs`. */
  factsCheckMs: number;
  factsResendMs: number;
  /** How often integrations are reported with their configuration. */
  integrationsConfigIntervalMs: number;
}

/** One round's heartbeat, and whether its integrations carry their configuration. */
export interface BuiltHeartbeat {
  heartbeat: HeartbeatIn;
  withConfig: boolean;
}

/**
 * Builds each round's heartbeat: integration statuses always; facts when they changed or every `factsResendMs`;
 * integrations with their configuration every `integrationsConfigIntervalMs`. It remembers what it sent between
 * rounds.
 */
export class HeartbeatBuilder {
  private factsCheckedAt = -Infinity;
  private factsSentAt = -Infinity;
  private factsKey = '';
  private integrationsConfigAt = -Infinity;
  private withConfig: HeartbeatIn['integrations'];
  private last:
    | { id: string; facts: HeartbeatIn['facts']; integrations: HeartbeatIn['integrations']; withConfig: boolean }
    | undefined;

  private readonly opts: HeartbeatBuilderOptions;
  constructor(opts: HeartbeatBuilderOptions) {
    this.opts = opts;
  }

  /** The integrations last collected with their configuration (the inventory snapshot falls back on them). */
  get integrationsWithConfig(): HeartbeatIn['integrations'] {
    return this.withConfig;
  }

  /** The heartbeat of the round at `now`; `waiting(id)` says whether a queued heartbeat has not been sent yet. */
  async build(now: number, waiting: (id: string) => boolean): Promise<BuiltHeartbeat> {
    const heartbeat: HeartbeatIn = {
      sent_at: new Date(now).toISOString(),
      agent_version: AGENT_VERSION,
      uptime_seconds: Math.floor((now - this.opts.startedAt) / 1000),
    };
    await this.addFacts(heartbeat, now);
    const withConfig = now - this.integrationsConfigAt >= this.opts.integrationsConfigIntervalMs;
    const integrations = await this.opts.collect('integrations', () => this.opts.collector.integrations(withConfig));
    if (integrations) {
      heartbeat.integrations = integrations;
      if (withConfig) {
        this.integrationsConfigAt = now;
        this.withConfig = integrations;
      }
    }
    // A heartbeat still waiting (the broker is away) is replaced by this one: what only it carried comes along.
    const last = this.last;
    if (last && waiting(last.id)) {
      heartbeat.facts ??= last.facts;
      if (last.withConfig && !withConfig) heartbeat.integrations = last.integrations;
    }
    return { heartbeat, withConfig };
  }

  /** Remembers the heartbeat queued as `id`: the next one replaces it while it waits. */
  queued(id: string, { heartbeat, withConfig }: BuiltHeartbeat): void {
    this.last = {
      id,
      facts: heartbeat.facts,
      integrations: heartbeat.integrations,
      withConfig: withConfig || this.last?.withConfig === true,
    };
  }

  private async addFacts(heartbeat: HeartbeatIn, now: number): Promise<void> {
    if (now - this.factsCheckedAt < this.opts.factsCheckMs) return;
    const facts = await this.opts.collect('facts', () => this.opts.collector.facts());
    if (!facts) return;
    this.factsCheckedAt = now;
    const key = JSON.stringify(facts);
    if (key !== this.factsKey || now - this.factsSentAt >= this.opts.factsResendMs) {
      heartbeat.facts = facts;
      this.factsKey = key;
      this.factsSentAt = now;
    }
  }
}
