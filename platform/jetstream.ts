import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  jetstream,
  jetstreamManager,
  type Consumer,
  type ConsumerConfig,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type PubAck,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, nanos, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';
import { Headers } from '../contracts/envelope.ts';
import { describeZodError } from '../contracts/errors.ts';
import {
  DlqHeaders,
  dlqSubjectFor,
  durableSubjects,
  isDurableSubject,
  type DlqReason,
  type DurableIn,
  type DurableSubject,
  type EventSubject,
  type StreamSpec,
} from '../contracts/streams.ts';
import { currentDeadline } from './deadline.ts';
import type { Logger } from './logger.ts';
import { deadLetters } from './metrics.ts';
import { wireDurableName, wireDurableSubject } from './namespace.ts';
import { brokerReplicas } from './replicas.ts';
import { parseTraceparent } from './trace.ts';

// JetStream API error codes we branch on (server/errors.json).
const STREAM_NAME_IN_USE = 10058;

/**
 * The server's own redelivery cap sits this far above ours so the last word is always ours: a delivery past
 * `maxDeliver` (its last attempt timed out, its process died, or the dead-letter publish failed) still reaches our
 * code and is dead-lettered, instead of the server silently dropping it. It stays finite as a backstop.
 */
const SPARE_DELIVERIES = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const clients = new WeakMap<NatsConnection, JetStreamClient>();
/** One JetStream context per connection: it is cheap, but there is no reason to build one per publish. */
function js(nc: NatsConnection): JetStreamClient {
  let c = clients.get(nc);
  if (!c) {
    c = jetstream(nc);
    clients.set(nc, c);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------------------------
// Streams

/**
 * How long a declaration (stream or durable create/update) may take: in a cluster it is a proposal to the meta leader
 * and, for a change of replicas, a new raft group; during a leader election (about 8 s on a loaded machine) the
 * client's 5 s default fails a start-up that would have succeeded.
 */
const DECLARE_TIMEOUT_MS = 30_000;

/** The declared spec in the server's terms (durations in nanoseconds), at the deployment's replicas. */
export function toStreamConfig(
  spec: StreamSpec,
  replicas = brokerReplicas(),
): Partial<StreamConfig> & { name: string } {
  return {
    name: spec.name,
    description: spec.description,
    subjects: [...spec.subjects],
    retention: spec.retention,
    storage: spec.storage,
    max_age: nanos(spec.maxAgeMs),
    duplicate_window: nanos(spec.duplicateWindowMs),
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxMsgSize,
    num_replicas: replicas,
    discard: DiscardPolicy.Old,
  };
}

/**
 * Declares each stream, idempotently: create it, or bring an existing one to the declared limits and replicas. Never
 * deletes a stream: a change the server cannot apply in place (retention, storage) fails loudly, and an operator
 * migrates. A stream with fewer replicas than configured (an R1 stream of a single server now in a cluster) is scaled up
 * in place by that update: the server copies its messages to the new peers, nothing is lost or re-published.
 * Two processes booting at once are fine: an identical create succeeds, a lost race falls through to an update.
 */
export async function ensureStreams(nc: NatsConnection, specs: readonly StreamSpec[]): Promise<StreamInfo[]> {
  const jsm = await jetstreamManager(nc, { timeout: DECLARE_TIMEOUT_MS });
  const out: StreamInfo[] = [];
  for (const spec of specs) out.push(await withRetries(() => ensureStream(jsm, spec)));
  return out;
}

/** A declaration that must not change in place: retrying cannot help. */
class DeclarationConflict extends Error {}

/**
 * A young or electing cluster refuses declarations for a moment ("error creating store for stream" while a raft group
 * forms, timeouts during an election): a start-up retries for about half a minute before giving up.
 */
async function withRetries<T>(fn: () => Promise<T>, attempts = 6): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof DeclarationConflict || attempt >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 1_000 * attempt));
    }
  }
}

async function ensureStream(jsm: JetStreamManager, spec: StreamSpec): Promise<StreamInfo> {
  const cfg = toStreamConfig(spec);
  try {
    return await jsm.streams.add(cfg);
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE)) throw err;
  }
  const current = await jsm.streams.info(spec.name);
  for (const field of ['retention', 'storage'] as const) {
    if (current.config[field] !== cfg[field]) {
      throw new DeclarationConflict(
        `stream ${spec.name} exists with ${field}=${current.config[field]}, declared ${cfg[field]}: this cannot change in place and recreating would lose data; migrate it by hand`,
      );
    }
  }
  const { name: _name, retention: _retention, storage: _storage, ...update } = cfg;
  return jsm.streams.update(spec.name, update);
}

// ---------------------------------------------------------------------------------------------------------------
// Consumers

export interface DurableConsumerConfig {
  durable: string;
  /** Server-side redelivery cap (deliveries, not retries). */
  maxDeliver: number;
  /** How long a delivered message may stay unacknowledged before the server redelivers it. */
  ackWaitMs: number;
  /** One subject → `filter_subject`; several → `filter_subjects` (server 2.10+). None: the whole stream. */
  filterSubjects?: readonly string[];
  maxAckPending?: number;
  description?: string;
  /**
   * Where a newly created durable starts: `all` (default) the whole stream; `new` only what arrives after its
   * creation (high-volume telemetry: a fresh durable must not replay days of other deployments' messages).
   */
  startAt?: 'all' | 'new';
}

/**
 * A durable pull consumer with explicit acks, created or brought to `config` (idempotent, race-safe). One scaled up
 * from a single replica is also made to elect a leader among its new replicas (reelectScaledConsumer).
 */
export async function ensureConsumer(
  nc: NatsConnection,
  stream: string,
  config: DurableConsumerConfig,
  log?: Logger,
): Promise<ConsumerInfo> {
  const jsm = await jetstreamManager(nc, { timeout: DECLARE_TIMEOUT_MS });
  const filters = config.filterSubjects ?? [];
  const settable: Partial<ConsumerConfig> = {
    description: config.description,
    max_deliver: config.maxDeliver,
    ack_wait: nanos(config.ackWaitMs),
    max_ack_pending: config.maxAckPending ?? 1000,
    // Explicit rather than inherited, so a durable created before the stream was scaled up follows it.
    num_replicas: brokerReplicas(),
    // Both keys are always present so an update can also clear or switch a filter.
    filter_subject: filters.length === 1 ? filters[0] : undefined,
    filter_subjects: filters.length > 1 ? [...filters] : undefined,
  };
  const existing = await consumerInfo(jsm, stream, config.durable);
  if (!existing) {
    try {
      return await jsm.consumers.add(stream, {
        ...settable,
        durable_name: config.durable,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: config.startAt === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
        replay_policy: ReplayPolicy.Instant,
      });
    } catch (err) {
      // Another process may have created it between our look and our add; anything else is a real error.
      if (!(await consumerInfo(jsm, stream, config.durable))) throw err;
    }
  }
  // Retried like a stream's declaration: scaling up forms a new raft group, and a loaded cluster may time out on it.
  const updated = await withRetries(() => jsm.consumers.update(stream, config.durable, settable));
  // num_replicas 0 means "as the stream": the group is then its followers and its leader.
  const before = existing ? existing.config.num_replicas || (existing.cluster?.replicas?.length ?? 0) + 1 : 0;
  const oldLeader = existing?.cluster?.leader;
  if (before === 1 && brokerReplicas() > 1) {
    try {
      return await reelectScaledConsumer(nc, stream, config.durable, oldLeader);
    } catch (err) {
      // Not retried by a later start-up (the durable is at its replicas by then): the message says what to run. It
      // still works while its old node lives; failing the start-up would not make the election happen.
      log?.error({ err, stream, durable: config.durable }, 'durable scaled up without a fresh leader election');
    }
  }
  return updated;
}

/**
 * A durable scaled up from one replica keeps its old leader without an election, and nats-server (2.9, fixed in 2.11:
 * nats-io/nats-server#6838, #6851) can leave that group unable to elect once the old leader's node is lost: the
 * durable then answers nothing until an operator recreates it (a cluster test lost it 2 times in 5). Stepping the old
 * leader down once the new followers are online makes the group elect for real, after which it survives the loss of
 * any one node. The election may pick the old leader again; what matters is that the group held one.
 */
async function reelectScaledConsumer(
  nc: NatsConnection,
  stream: string,
  durable: string,
  oldLeader: string | undefined,
): Promise<ConsumerInfo> {
  // Short requests: one sent while the group has no leader is never answered, the next one after the election is.
  const jsm = await jetstreamManager(nc, { timeout: 2_000 });
  const until = Date.now() + DECLARE_TIMEOUT_MS;
  const subject = `${jsm.getOptions().apiPrefix ?? '$JS.API'}.CONSUMER.LEADER.STEPDOWN.${stream}.${durable}`;
  let last = 'the new replicas did not come online';
  let steppedDown = false;
  while (Date.now() < until) {
    const info = await consumerInfo(jsm, stream, durable).catch(() => undefined);
    const peers = info?.cluster?.replicas ?? [];
    const online = !!info?.cluster?.leader && peers.length === brokerReplicas() - 1 && peers.every((p) => !p.offline);
    // Another process starting at once may have had it elected already.
    if (online && (steppedDown || (oldLeader !== undefined && info!.cluster!.leader !== oldLeader))) return info!;
    if (online) {
      try {
        const reply = (await nc.request(subject, undefined, { timeout: 5_000 })).json<{
          success?: boolean;
          error?: { description?: string };
        }>();
        steppedDown = reply.success === true;
        last = reply.error?.description ?? 'the step-down was refused';
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  if (steppedDown) last = 'no leader was elected in time';
  throw new Error(
    `durable ${durable} on ${stream} was scaled to ${brokerReplicas()} replicas but not re-elected (${last}); run \`nats consumer cluster step-down ${stream} ${durable}\``,
  );
}

const isConsumerNotFound = (err: unknown): boolean =>
  err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;

async function consumerInfo(jsm: JetStreamManager, stream: string, durable: string): Promise<ConsumerInfo | undefined> {
  try {
    return await jsm.consumers.info(stream, durable);
  } catch (err) {
    if (isConsumerNotFound(err)) return undefined;
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Running a consumer

/** Throw from a handler when retrying cannot help (e.g. the recipient address is rejected): dead-lettered at once. */
export class NonRetryableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}

/**
 * Throw from a handler to be retried after `delayMs` instead of the consumer's backoff schedule (a peer's
 * Retry-After, or the handler's own jittered backoff). The delivery limit still applies.
 */
export class RetryLaterError extends Error {
  readonly delayMs: number;
  constructor(message: string, delayMs: number, options?: ErrorOptions) {
    super(message, options);
    this.delayMs = delayMs;
    this.name = 'RetryLaterError';
  }
}

/** What `onDeadLetter` learns: the parsed payload (undefined when it was malformed), why, and the error text. */
export interface DeadLetterInfo<T> {
  payload: T | undefined;
  reason: DlqReason;
  error: string;
  log: Logger;
}

export interface DeliveryMeta {
  subject: string;
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** The publisher's `Nats-Msg-Id`, when it set one: a natural idempotency key for the handler. */
  msgId: string | undefined;
  headers: MsgHdrs | undefined;
  streamSequence: number;
  /** Child logger with durable, subject, sequence, delivery and request id. */
  log: Logger;
  /** Aborted when `stop()` is called: a long handler may give up early (it is then retried, here or elsewhere). */
  signal: AbortSignal;
}

export interface RunConsumerOptions<T> {
  nc: NatsConnection;
  stream: string;
  durable: string;
  filterSubjects?: readonly string[];
  schema: z.ZodType<T>;
  /**
   * Turns a message's bytes into what `schema` checks (default: UTF-8 JSON); the subject tells who sent it (a
   * decoder may keep something per sender). A throw dead-letters the message as malformed, with the error's message
   * as the reason.
   */
  decode?: (data: Uint8Array, subject: string) => unknown;
  handler: (payload: T, meta: DeliveryMeta) => Promise<void>;
  /** Deliveries before a failing message is dead-lettered. Default 5. */
  maxDeliver?: number;
  /** Delay before redelivery after the n-th failed delivery (index n-1); the last entry repeats. */
  backoffMs?: readonly number[];
  /** Default 30 s. Long handlers are kept alive with `working()` every third of it. */
  ackWaitMs?: number;
  /** Handlers running at once in this process. Default 1. */
  concurrency?: number;
  /** See DurableConsumerConfig.startAt. */
  startAt?: 'all' | 'new';
  /** Unacknowledged messages the server lets this durable have out at once (all instances together). Default 1000. */
  maxAckPending?: number;
  /**
   * Called once a message is dead-lettered (after the DLQ publish), so a domain can record the outcome (e.g. a
   * "failed" state). Its errors are logged, never retried: the message is already in the DLQ.
   */
  onDeadLetter?: (info: DeadLetterInfo<T>) => Promise<void>;
  /**
   * A dead letter is an error to alert on (logged at error, naming the subject, the stream sequence and how to replay
   * it) rather than a warning: set where a message must not go missing (audit entries). Every dead letter counts in
   * `svc_dead_letters_total` either way.
   */
  alertOnDeadLetter?: boolean;
  log: Logger;
}

export interface ConsumerHandle {
  readonly durable: string;
  /** Stops fetching, hands back unstarted messages, and resolves once in-flight handlers have finished. */
  stop(): Promise<void>;
}

export const DEFAULT_BACKOFF_MS: readonly number[] = [1_000, 5_000, 30_000, 120_000, 600_000];

/**
 * Consumes `stream` through the durable `durable`: parse, handle, ack; nak with backoff on failure; dead-letter to
 * `svc.dlq.<durable>` (then `term`) when a payload is malformed, a handler throws `NonRetryableError`, or the last
 * allowed delivery fails. Survives NATS reconnects and a deleted consumer (it recreates it). Handlers must be
 * idempotent: delivery is at-least-once.
 */
export async function runConsumer<T>(opts: RunConsumerOptions<T>): Promise<ConsumerHandle> {
  const { nc, stream, schema, handler } = opts;
  const decode = opts.decode ?? ((data: Uint8Array): unknown => JSON.parse(decoder.decode(data)));
  const durable = wireDurableName(opts.durable);
  const maxDeliver = opts.maxDeliver ?? 5;
  const backoff = opts.backoffMs && opts.backoffMs.length > 0 ? opts.backoffMs : DEFAULT_BACKOFF_MS;
  const ackWaitMs = opts.ackWaitMs ?? 30_000;
  const concurrency = opts.concurrency ?? 1;
  if (!Number.isInteger(maxDeliver) || maxDeliver < 1) throw new Error('maxDeliver must be a positive integer');
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error('concurrency must be a positive integer');
  const dlqSubject = dlqSubjectFor(durable);
  const log = opts.log.child({ durable, stream });
  const consumerConfig: DurableConsumerConfig = {
    durable,
    maxDeliver: maxDeliver + SPARE_DELIVERIES,
    ackWaitMs,
    filterSubjects: opts.filterSubjects?.map(wireDurableSubject),
    startAt: opts.startAt,
    maxAckPending: opts.maxAckPending,
  };
  // Boot fails loudly on a bad config; later problems are logged and retried by the loop.
  await ensureConsumer(nc, stream, consumerConfig, log);

  const stopping = new AbortController();
  const inflight = new Set<Promise<void>>();
  // Woken when a handler finishes: waiting on Promise.race(inflight) instead added a reaction to every in-flight
  // handler for each message that arrived at the cap (512 per message for the metrics ingest).
  let slotFreed: (() => void) | undefined;
  const freeSlot = (): Promise<void> => new Promise<void>((resolve) => (slotFreed = resolve));
  let current: ConsumerMessages | undefined;

  const settle = (m: JsMsg, what: 'ack' | 'nak' | 'term', delayMs?: number): void => {
    try {
      if (what === 'ack') m.ack();
      else if (what === 'nak') m.nak(delayMs);
      // No reason string: servers before 2.11 ignore "+TERM <reason>" entirely; the reason is in the dead letter.
      else m.term();
    } catch (err) {
      log.warn({ err, seq: m.seq, what }, 'could not settle message; the server will redeliver it after ack_wait');
    }
  };

  const deadLetter = async (
    m: JsMsg,
    reason: DlqReason,
    error: string,
    mlog: Logger,
    payload?: T,
  ): Promise<boolean> => {
    const h = natsHeaders();
    for (const [k, values] of m.headers ?? []) {
      // The original's Nats-* headers (msg id, expectations) must not act on the DLQ stream.
      if (/^nats-/i.test(k)) continue;
      for (const v of values) h.append(k, v);
    }
    h.set(DlqHeaders.subject, m.subject);
    h.set(DlqHeaders.error, headerValue(error));
    h.set(DlqHeaders.reason, reason);
    h.set(DlqHeaders.deliveryCount, String(m.info.deliveryCount));
    h.set(DlqHeaders.stream, m.info.stream);
    h.set(DlqHeaders.streamSeq, String(m.seq));
    h.set(DlqHeaders.durable, durable);
    const msgId = m.headers?.get('Nats-Msg-Id');
    if (msgId) h.set(DlqHeaders.msgId, msgId);
    try {
      // Dedup on the source position: a crash between this publish and the term cannot dead-letter it twice.
      await js(nc).publish(dlqSubject, m.data, { headers: h, msgID: `${durable}:${m.info.stream}:${m.seq}` });
      deadLetters.inc({ durable, reason });
      if (opts.alertOnDeadLetter) {
        mlog.error(
          { reason, error, dlq: dlqSubject, subject: m.subject, seq: m.seq },
          `message dead-lettered, not handled until replayed: ${m.subject} sequence ${m.seq} (${reason}); replay with \`npm run dlq -- replay ${opts.durable}\``,
        );
      } else {
        mlog.warn({ reason, error, dlq: dlqSubject }, 'message dead-lettered');
      }
      settle(m, 'term');
      if (opts.onDeadLetter) {
        await opts
          .onDeadLetter({ payload, reason, error, log: mlog })
          .catch((err: unknown) => mlog.error({ err, reason }, 'onDeadLetter failed'));
      }
      return true;
    } catch (err) {
      mlog.error({ err, reason, error }, 'dead-letter publish failed; the message will be retried');
      settle(m, 'nak', backoff[backoff.length - 1]);
      return false;
    }
  };

  const handleMessage = async (m: JsMsg): Promise<void> => {
    const deliveryCount = m.info.deliveryCount;
    const msgId = m.headers?.get('Nats-Msg-Id') || undefined;
    const requestId = m.headers?.get(Headers.requestId) || undefined;
    const traceId = parseTraceparent(m.headers?.get(Headers.traceparent))?.traceId;
    const mlog = log.child({
      subject: m.subject,
      seq: m.seq,
      delivery: deliveryCount,
      ...(requestId ? { request_id: requestId } : {}),
      ...(traceId ? { trace_id: traceId } : {}),
    });

    let payload: T | undefined;
    {
      let decoded: unknown;
      try {
        decoded = decode(m.data, m.subject);
      } catch (err) {
        await deadLetter(
          m,
          'malformed',
          opts.decode && err instanceof Error ? err.message : 'payload is not JSON',
          mlog,
        );
        return;
      }
      let parsed: ReturnType<typeof schema.safeParse>;
      try {
        parsed = schema.safeParse(decoded);
      } catch (err) {
        // A transform that throws rather than reporting an issue: still the payload's fault, never a redelivery loop.
        await deadLetter(m, 'malformed', err instanceof Error ? err.message : String(err), mlog);
        return;
      }
      if (!parsed.success) {
        await deadLetter(m, 'malformed', describeZodError(parsed.error), mlog);
        return;
      }
      payload = parsed.data;
    }
    if (deliveryCount > maxDeliver) {
      await deadLetter(
        m,
        'exhausted',
        `delivery ${deliveryCount} exceeds maxDeliver ${maxDeliver}: the last attempt did not settle (ack timeout, crash, or failed dead-letter)`,
        mlog,
        payload,
      );
      return;
    }

    // Keeps the server from redelivering while a slow handler is still working; stops if this process dies.
    const heartbeat = setInterval(
      () => {
        try {
          m.working();
        } catch {
          // Connection gone: the server redelivers after ack_wait, nothing to do here.
        }
      },
      Math.max(Math.floor(ackWaitMs / 3), 50),
    );
    const started = performance.now();
    try {
      const handled = handler(payload, {
        subject: m.subject,
        deliveryCount,
        msgId,
        headers: m.headers,
        streamSequence: m.seq,
        log: mlog,
        signal: stopping.signal,
      });
      // Only onDeadLetter needs the payload after the handler: without it, the payload is not kept alive while the
      // handler waits (the metrics ingest has hundreds waiting for their imports, and what outlived two scavenges
      // was promoted and left to the full collections).
      if (!opts.onDeadLetter) payload = undefined;
      await handled;
      settle(m, 'ack');
      mlog.debug({ ms: Math.round(performance.now() - started) }, 'handled');
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof NonRetryableError) {
        await deadLetter(m, 'rejected', message, mlog, payload);
      } else if (deliveryCount >= maxDeliver) {
        await deadLetter(m, 'failed', message, mlog, payload);
      } else {
        const delay =
          err instanceof RetryLaterError
            ? Math.max(0, err.delayMs)
            : (backoff[deliveryCount - 1] ?? backoff[backoff.length - 1]);
        mlog.warn({ err, retry_in_ms: delay }, 'handler failed; will retry');
        settle(m, 'nak', delay);
      }
    } finally {
      clearInterval(heartbeat);
    }
  };

  const loop = async (): Promise<void> => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      if (nc.isClosed()) {
        log.warn('connection closed; consumer loop ends');
        return;
      }
      try {
        const messages = await openMessages(nc, stream, consumerConfig, concurrency, log);
        current = messages;
        if (stopping.signal.aborted) {
          await messages.close().catch(() => undefined);
          return;
        }
        watchStatus(messages, log);
        failures = 0;
        for await (const m of messages) {
          if (!stopping.signal.aborted) {
            while (inflight.size >= concurrency) await freeSlot();
          }
          if (stopping.signal.aborted) {
            // Fetched but not started: hand it back now so another instance takes it without waiting ack_wait.
            settle(m, 'nak');
            continue;
          }
          const p = handleMessage(m)
            .catch((err: unknown) => log.error({ err, seq: m.seq }, 'message processing failed'))
            .finally(() => {
              inflight.delete(p);
              const wake = slotFreed;
              slotFreed = undefined;
              wake?.();
            });
          inflight.add(p);
        }
      } catch (err) {
        if (stopping.signal.aborted) return;
        log.error({ err }, 'consumer loop failed; restarting');
      }
      if (!stopping.signal.aborted) await sleep(Math.min(250 * 2 ** failures++, 10_000), stopping.signal);
    }
  };

  const done = loop();
  let stopped: Promise<void> | undefined;
  return {
    durable,
    stop(): Promise<void> {
      stopped ??= (async () => {
        stopping.abort();
        await current?.close().catch(() => undefined);
        await done;
        await Promise.allSettled([...inflight]);
      })();
      return stopped;
    },
  };
}

/** Binds to the durable, recreating it when it was deleted under us. */
async function openMessages(
  nc: NatsConnection,
  stream: string,
  config: DurableConsumerConfig,
  concurrency: number,
  log: Logger,
): Promise<ConsumerMessages> {
  let consumer: Consumer;
  try {
    consumer = await js(nc).consumers.get(stream, config.durable);
  } catch (err) {
    if (!isConsumerNotFound(err)) throw err;
    log.warn('durable consumer missing; recreating it');
    await ensureConsumer(nc, stream, config, log);
    consumer = await js(nc).consumers.get(stream, config.durable);
  }
  return consumer.consume({ max_messages: concurrency });
}

function watchStatus(messages: ConsumerMessages, log: Logger): void {
  void (async () => {
    for await (const s of messages.status()) {
      if (s.type === 'consumer_deleted' || s.type === 'consumer_not_found') {
        // consume() would only poll; closing makes the loop recreate the durable.
        log.warn({ status: s.type }, 'durable consumer gone; reopening');
        await messages.close();
        return;
      }
      if (s.type === 'heartbeats_missed' || s.type === 'stream_not_found' || s.type === 'no_responders')
        log.warn({ status: s }, 'consumer status');
    }
  })().catch((err: unknown) => log.warn({ err }, 'consumer status watcher ended'));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Header values cannot hold CR/LF and should stay small. */
function headerValue(s: string): string {
  const flat = s.replace(/[\r\n]+/g, ' ');
  return flat.length > 1000 ? `${flat.slice(0, 997)}...` : flat;
}

// ---------------------------------------------------------------------------------------------------------------
// Publishing

export interface PublishDurableOptions {
  /**
   * Sets `Nats-Msg-Id`: a publish retried with the same id inside the stream's duplicate window is stored once. Without
   * one, a fresh id is set, so that the retries below never store a message twice.
   */
  msgId?: string;
  /** Extra headers, e.g. `{ [Headers.requestId]: ctx.request_id, traceparent: scope.traceparent }` so the consumer's logs join the request's. */
  headers?: Record<string, string>;
  /** How long one attempt waits for the stream's ack (default 5 s, never past the retry budget). */
  timeoutMs?: number;
  /**
   * How long a publish keeps retrying while the stream cannot take it (default: until the deadline of the request being
   * handled, less a margin to reply in; outside a request, 15 s).
   */
  retryForMs?: number;
}

/** Outside a request: long enough for a JetStream cluster to elect a new stream leader (about 8 s when one was lost). */
const PUBLISH_RETRY_MS = 15_000;
/** Left of a request's deadline for the handler to answer after its last attempt. */
const REPLY_MARGIN_MS = 250;
const PUBLISH_ACK_TIMEOUT_MS = 5_000;

/**
 * Errors after which the same publish can succeed a moment later: no ack in time (a stream leader being elected), no
 * responder on the stream's subjects (its leader gone and not yet replaced), JetStream answering 503. A closed or
 * draining connection, a refused permission or a rejected message are final.
 */
export function isTransientPublishError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'TimeoutError' || err.name === 'JetStreamNotEnabled') return true;
  return err instanceof JetStreamApiError && err.status === 503;
}

/** A typed subject takes its catalogue payload; any other subject takes anything JSON-serialisable. */
export type DurablePayload<S extends string> = S extends DurableSubject ? DurableIn<S> : unknown;

/**
 * Publishes to JetStream and waits for the stream's ack. A subject in the durable table is parsed against its schema
 * first (a mismatch throws before anything is sent), and the parsed value is what is sent. While the stream cannot
 * take the message (a node of the cluster lost or restarting, its leader being elected), the publish is retried with
 * backoff under the same message id within its budget (`retryForMs`), so the write waits instead of failing.
 */
export async function publishDurable<S extends string>(
  nc: NatsConnection,
  subject: S,
  payload: DurablePayload<S>,
  opts: PublishDurableOptions = {},
): Promise<PubAck> {
  let body: unknown = payload;
  if (isDurableSubject(subject)) {
    const parsed = durableSubjects[subject].payload.safeParse(payload);
    if (!parsed.success) throw new Error(`invalid payload for ${subject}: ${describeZodError(parsed.error)}`);
    body = parsed.data;
  }
  const h = natsHeaders();
  for (const [k, v] of Object.entries(opts.headers ?? {})) h.set(k, headerValue(v));
  const data = encoder.encode(JSON.stringify(body));
  const wire = wireDurableSubject(subject);
  const msgID = opts.msgId ?? randomUUID();
  const request = currentDeadline();
  const until =
    opts.retryForMs !== undefined
      ? Date.now() + opts.retryForMs
      : request
        ? request.deadline - REPLY_MARGIN_MS
        : Date.now() + PUBLISH_RETRY_MS;
  for (let attempt = 0; ; attempt++) {
    const left = until - Date.now();
    try {
      return await js(nc).publish(wire, data, {
        headers: h,
        msgID,
        // The first attempt waits as long as it always did (at least a second); a retry only as long as is left.
        timeout: Math.min(opts.timeoutMs ?? PUBLISH_ACK_TIMEOUT_MS, Math.max(left, attempt === 0 ? 1_000 : 50)),
      });
    } catch (err) {
      const pause = Math.min(1_000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2);
      if (!isTransientPublishError(err) || until - Date.now() < pause + 50) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** `publishDurable` restricted to the event table: an unknown event or a wrong payload is a compile error. */
export function publishEvent<S extends EventSubject>(
  nc: NatsConnection,
  subject: S,
  payload: DurableIn<S>,
  opts: PublishDurableOptions = {},
): Promise<PubAck> {
  return publishDurable<S>(nc, subject, payload as DurablePayload<S>, opts);
}
