import type { z } from 'zod';
import {
  AgentEventBatch,
  Heartbeat,
  InventorySnapshot,
  MetricBatch,
  type MetricBatchIn,
  type TelemetryKind,
} from '../contracts/domains/agent-telemetry.ts';
import { encodeCompactMetricBatch } from '../contracts/domains/metric-wire.ts';
import { describeZodError } from '../contracts/errors.ts';
import { telemetrySubject } from '../contracts/streams.ts';
import type { Logger } from '../platform/logger.ts';
import type { FileChangeIn, OnFileChanges } from './collect/types.ts';
import { errMessage } from './connection.ts';
import type { Outbox } from './outbox.ts';

const encoder = new TextEncoder();
const SCHEMAS: Record<TelemetryKind, z.ZodType> = {
  heartbeat: Heartbeat,
  inventory: InventorySnapshot,
  metrics: MetricBatch,
  events: AgentEventBatch,
};
/** At most this many file changes per events message (AgentEventBatch's limit). */
export const MAX_EVENTS_PER_BATCH = 1_000;

export interface TelemetryPublisherOptions {
  agentId: string;
  /** Unique per run of the agent: with the sequence number it makes each message's `Nats-Msg-Id`. */
  bootId: string;
  /** Check every payload against its schema before sending. */
  validate: boolean;
  outbox: Pick<Outbox, 'add'>;
  log: Logger;
}

/** Turns payloads into outbox messages: checked against their schema, encoded, named for deduplication. */
export class TelemetryPublisher {
  private seq = 0;
  private invalid = 0;

  private readonly opts: TelemetryPublisherOptions;
  constructor(opts: TelemetryPublisherOptions) {
    this.opts = opts;
  }

  /** Payloads refused: not matching their schema, or not encodable. */
  get invalidPayloads(): number {
    return this.invalid;
  }

  /** Queues one message; its `Nats-Msg-Id`, or undefined when it was not queued. */
  publish(kind: TelemetryKind, payload: unknown): string | undefined {
    const { agentId, bootId, validate, outbox, log } = this.opts;
    // A metric batch is encoded as the schema gives it back (what the ingest would make of it as JSON).
    let checked: unknown = payload;
    if (validate) {
      const parsed = SCHEMAS[kind].safeParse(payload);
      if (!parsed.success) {
        this.invalid++;
        log.error(
          { kind, reason: describeZodError(parsed.error) },
          'collected payload does not match its schema; not sent',
        );
        return undefined;
      }
      checked = parsed.data;
    }
    const id = `${agentId}:${kind}:${bootId}-${(this.seq++).toString(36)}`;
    // Metric batches in the compact form (contracts/domains/metric-wire.ts: a seventh of the bytes); the rest as JSON.
    let data: Uint8Array;
    try {
      data =
        kind === 'metrics'
          ? encodeCompactMetricBatch(checked as MetricBatchIn)
          : encoder.encode(JSON.stringify(payload));
    } catch (err) {
      this.invalid++;
      log.error({ kind, reason: errMessage(err) }, 'collected payload could not be encoded; not sent');
      return undefined;
    }
    return outbox.add({ id, kind, subject: telemetrySubject(agentId, kind), data }) ? id : undefined;
  }
}

/**
 * File changes, gathered briefly before they are sent, so a burst (a package upgrade) becomes a few batches, not
 * thousands of messages.
 */
export class FileEventBatcher {
  private pending: FileChangeIn[] = [];
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly send: (batch: { events: FileChangeIn[] }) => void;
  private readonly batchMs: number;
  constructor(send: (batch: { events: FileChangeIn[] }) => void, batchMs: number) {
    this.send = send;
    this.batchMs = batchMs;
  }

  /** The watcher's callback. */
  readonly onChanges: OnFileChanges = (events) => {
    if (this.closed || events.length === 0) return;
    this.pending.push(...events);
    if (this.pending.length >= MAX_EVENTS_PER_BATCH) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.batchMs);
  };

  /** Sends what is gathered now. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const events = this.pending;
    this.pending = [];
    for (let i = 0; i < events.length; i += MAX_EVENTS_PER_BATCH)
      this.send({ events: events.slice(i, i + MAX_EVENTS_PER_BATCH) });
  }

  /** Changes reported from now on are dropped (the agent is stopping); what is gathered stays for `flush`. */
  close(): void {
    this.closed = true;
  }
}
