import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { TelemetryKind } from '../contracts/domains/agent-telemetry.ts';
import type { Logger } from '../platform/logger.ts';
import { errMessage } from './connection.ts';

/**
 * Telemetry waiting to be stored. Every message goes through here, broker up or not: it is sent as a request to its
 * stream subject, and only the stream's PubAck (through the agent's own inbox) removes it, so a message is known to
 * be durable before it is forgotten. A retry carries the same `Nats-Msg-Id`, so the stream stores it once even when
 * only the ack was lost (within the stream's duplicate window, 2 minutes).
 *
 * Bounds (in memory only; a restart loses what is pending, heartbeat and inventory are rebuilt at start):
 * - at most `maxMessages` messages and `maxBytes` bytes: when full, the oldest metric batches go first, then the
 *   oldest event batches, then the oldest of anything;
 * - at most one pending inventory snapshot and one pending heartbeat: a newer one replaces the one still waiting
 *   (one already on the wire is forgotten if it fails, since a newer one follows).
 * Messages go out in the order they were added, up to `maxInFlight` at a time; a failed send pauses the pump with a
 * growing, jittered backoff, and the link coming back resumes it at once.
 */

export interface OutboxMessage {
  /** `Nats-Msg-Id`: `<agent_id>:<kind>:<unique>`. */
  readonly id: string;
  readonly kind: TelemetryKind;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly size: number;
  readonly addedAt: number;
  attempts: number;
  inFlight: boolean;
  /** A newer message of a latest-only kind was added while this one was on the wire. */
  superseded: boolean;
}

/** What became of one send: stored (or already stored), worth retrying, or never going to be stored. */
export type SendResult =
  | { outcome: 'stored'; duplicate: boolean }
  | { outcome: 'retry'; reason: string }
  | { outcome: 'reject'; reason: string };
export type Send = (msg: OutboxMessage) => Promise<SendResult>;

export interface OutboxOptions {
  send: Send;
  /** Whether sending makes sense now (the broker is connected). */
  ready: () => boolean;
  log: Logger;
  maxMessages?: number;
  maxBytes?: number;
  maxInFlight?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
}

export const OUTBOX_DEFAULTS = {
  maxMessages: 10_000,
  maxBytes: 64 * 1024 * 1024,
  maxInFlight: 32,
  retryMinMs: 500,
  retryMaxMs: 30_000,
} as const;

/** Kinds of which only the newest pending message matters. */
const LATEST_ONLY: ReadonlySet<TelemetryKind> = new Set(['heartbeat', 'inventory']);
/** What is dropped first when the outbox is full. */
const DROP_ORDER: readonly TelemetryKind[] = ['metrics', 'events'];

export interface KindStats {
  added: number;
  stored: number;
  duplicates: number;
  /** Dropped to stay within the bounds. */
  dropped: number;
  /** Replaced by a newer message of a latest-only kind. */
  replaced: number;
  /** Refused by the stream for good (e.g. too large). */
  rejected: number;
}

export interface OutboxStats {
  pending: number;
  pendingBytes: number;
  inFlight: number;
  sendFailures: number;
  kinds: Record<TelemetryKind, KindStats>;
}

const emptyKind = (): KindStats => ({ added: 0, stored: 0, duplicates: 0, dropped: 0, replaced: 0, rejected: 0 });

export class Outbox {
  private readonly queue: OutboxMessage[] = [];
  private bytes = 0;
  private inFlight = 0;
  private failures = 0;
  private sendFailures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private emptyWaiters: (() => void)[] = [];
  private readonly kinds: Record<TelemetryKind, KindStats> = {
    heartbeat: emptyKind(),
    inventory: emptyKind(),
    metrics: emptyKind(),
    events: emptyKind(),
  };
  private readonly maxMessages: number;
  private readonly maxBytes: number;
  private readonly maxInFlight: number;

  private readonly opts: OutboxOptions;
  constructor(opts: OutboxOptions) {
    this.opts = opts;
    this.maxMessages = opts.maxMessages ?? OUTBOX_DEFAULTS.maxMessages;
    this.maxBytes = opts.maxBytes ?? OUTBOX_DEFAULTS.maxBytes;
    this.maxInFlight = opts.maxInFlight ?? OUTBOX_DEFAULTS.maxInFlight;
  }

  /** Queues a message and starts sending when possible; false when it was refused (larger than the whole outbox). */
  add(msg: { id: string; kind: TelemetryKind; subject: string; data: Uint8Array }): boolean {
    const entry: OutboxMessage = {
      ...msg,
      size: msg.data.byteLength + msg.subject.length + msg.id.length,
      addedAt: Date.now(),
      attempts: 0,
      inFlight: false,
      superseded: false,
    };
    const stats = this.kinds[msg.kind];
    stats.added++;
    if (entry.size > this.maxBytes) {
      stats.dropped++;
      this.opts.log.warn(
        { kind: msg.kind, bytes: entry.size },
        'telemetry message larger than the whole outbox; dropped',
      );
      return false;
    }
    if (LATEST_ONLY.has(msg.kind)) {
      for (let i = this.queue.length - 1; i >= 0; i--) {
        const old = this.queue[i]!;
        if (old.kind !== msg.kind) continue;
        if (old.inFlight) old.superseded = true;
        else this.removeAt(i);
        stats.replaced++;
      }
    }
    this.queue.push(entry);
    this.bytes += entry.size;
    this.enforceBounds(entry);
    this.pump();
    return true;
  }

  private enforceBounds(keep: OutboxMessage): void {
    let dropped = 0;
    while (this.queue.length > this.maxMessages || this.bytes > this.maxBytes) {
      const victim = this.victimIndex(keep);
      if (victim < 0) break;
      const kind = this.queue[victim]!.kind;
      this.kinds[kind].dropped++;
      this.removeAt(victim);
      dropped++;
    }
    if (dropped > 0)
      this.opts.log.warn(
        { dropped, pending: this.queue.length, pending_bytes: this.bytes },
        'telemetry outbox full; dropped the oldest messages',
      );
  }

  private victimIndex(keep: OutboxMessage): number {
    for (const kind of DROP_ORDER) {
      const i = this.queue.findIndex((m) => m.kind === kind && !m.inFlight && m !== keep);
      if (i >= 0) return i;
    }
    return this.queue.findIndex((m) => !m.inFlight && m !== keep);
  }

  private removeAt(i: number): void {
    const [m] = this.queue.splice(i, 1);
    if (m) this.bytes -= m.size;
    if (this.queue.length === 0) this.notifyEmpty();
  }

  private remove(m: OutboxMessage): void {
    const i = this.queue.indexOf(m);
    if (i >= 0) this.removeAt(i);
  }

  /** Sends what it may now: nothing while the link is down or a retry is pending. Called again by the link. */
  pump(): void {
    if (this.closed || this.retryTimer || !this.opts.ready()) return;
    for (const m of this.queue) {
      if (this.inFlight >= this.maxInFlight) break;
      if (m.inFlight) continue;
      this.sendOne(m);
    }
  }

  /** The broker is back: retry at once instead of waiting out the backoff. */
  resume(): void {
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    this.failures = 0;
    this.pump();
  }

  private sendOne(m: OutboxMessage): void {
    m.inFlight = true;
    m.attempts++;
    this.inFlight++;
    Promise.resolve()
      .then(() => this.opts.send(m))
      .catch((err: unknown): SendResult => ({ outcome: 'retry', reason: errMessage(err) ?? 'send failed' }))
      .then((result) => this.settle(m, result))
      .catch((err: unknown) => this.opts.log.error({ err }, 'outbox bookkeeping failed'));
  }

  private settle(m: OutboxMessage, result: SendResult): void {
    m.inFlight = false;
    this.inFlight--;
    const stats = this.kinds[m.kind];
    if (result.outcome === 'stored') {
      stats.stored++;
      if (result.duplicate) stats.duplicates++;
      this.failures = 0;
      this.remove(m);
    } else if (result.outcome === 'reject') {
      stats.rejected++;
      this.opts.log.error(
        { kind: m.kind, msg_id: m.id, reason: result.reason },
        'telemetry message refused by the stream; dropped',
      );
      this.remove(m);
    } else {
      this.sendFailures++;
      if (m.superseded) this.remove(m);
      if (!this.retryTimer && !this.closed) {
        const min = this.opts.retryMinMs ?? OUTBOX_DEFAULTS.retryMinMs;
        const max = this.opts.retryMaxMs ?? OUTBOX_DEFAULTS.retryMaxMs;
        const base = Math.min(max, min * 2 ** Math.min(this.failures, 16));
        this.failures++;
        const delay = base / 2 + Math.random() * (base / 2);
        if (this.failures === 1 || this.failures % 10 === 0)
          this.opts.log.warn(
            { kind: m.kind, reason: result.reason, retry_ms: Math.round(delay), pending: this.queue.length },
            'telemetry not stored yet; retrying',
          );
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.pump();
        }, delay);
      }
      return;
    }
    this.pump();
  }

  private notifyEmpty(): void {
    const waiters = this.emptyWaiters;
    this.emptyWaiters = [];
    for (const w of waiters) w();
  }

  /** Resolves true once everything pending is stored, false when `timeoutMs` passes first. */
  async flush(timeoutMs: number): Promise<boolean> {
    if (this.queue.length === 0) return true;
    this.resume();
    let timer: NodeJS.Timeout | undefined;
    const emptied = new Promise<boolean>((resolve) => this.emptyWaiters.push(() => resolve(true)));
    const ok = await Promise.race([
      emptied,
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return ok;
  }

  /** Stops retrying; what is pending stays (and is counted) but is no longer sent. */
  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  stats(): OutboxStats {
    return {
      pending: this.queue.length,
      pendingBytes: this.bytes,
      inFlight: this.inFlight,
      sendFailures: this.sendFailures,
      kinds: structuredClone(this.kinds),
    };
  }

  /** Whether the message with this id is still waiting to be stored. */
  has(id: string): boolean {
    return this.queue.some((m) => m.id === id);
  }

  /** Pending messages, oldest first (tests and diagnostics). */
  pending(): readonly Pick<OutboxMessage, 'id' | 'kind' | 'subject' | 'size' | 'inFlight'>[] {
    return this.queue.map(({ id, kind, subject, size, inFlight }) => ({ id, kind, subject, size, inFlight }));
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Sending to JetStream without the JetStream API: a plain request on the stream's subject is answered with its PubAck.

interface PubAckReply {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

const decoder = new TextDecoder();

/** A stream's answer to a publish; 5xx errors (storage trouble, no leader) are retried, others are final. */
export function interpretPubAck(data: Uint8Array): SendResult {
  let ack: PubAckReply;
  try {
    ack = JSON.parse(decoder.decode(data)) as PubAckReply;
  } catch {
    return { outcome: 'retry', reason: 'reply is not a PubAck' };
  }
  if (ack && typeof ack === 'object' && ack.error) {
    const reason = `${ack.error.description ?? 'stream error'} (${ack.error.code ?? '?'}/${ack.error.err_code ?? '?'})`;
    return (ack.error.code ?? 500) >= 500 ? { outcome: 'retry', reason } : { outcome: 'reject', reason };
  }
  if (ack && typeof ack === 'object' && typeof ack.stream === 'string' && typeof ack.seq === 'number')
    return { outcome: 'stored', duplicate: ack.duplicate === true };
  return { outcome: 'retry', reason: 'reply is not a PubAck' };
}

/** Sends through the link's current connection with `Nats-Msg-Id`; no connection is a retry, not a wait. */
export function streamSender(current: () => NatsConnection | undefined, timeoutMs: number): Send {
  return async (m) => {
    const nc = current();
    if (!nc) return { outcome: 'retry', reason: 'disconnected' };
    const h = natsHeaders();
    h.set('Nats-Msg-Id', m.id);
    const reply = await nc.request(m.subject, m.data, { headers: h, timeout: timeoutMs });
    return interpretPubAck(reply.data);
  };
}
