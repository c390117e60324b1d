import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  jetstreamManager,
  type Consumer,
  type ConsumerConfig,
  type ConsumerInfo,
  type ConsumerMessages,
  type JetStreamManager,
  type PubAck,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, nanos, type NatsConnection } from '@nats-io/transport-node';
import { describeZodError } from '../contracts/errors.ts';
import {
  dlqSubjectFor,
  durableSubjects,
  isDurableSubject,
  type DurableIn,
  type DurableSubject,
  type EventSubject,
  type StreamSpec,
} from '../contracts/streams.ts';
import { currentDeadline } from './deadline.ts';
import { headerValue, js } from './jetstream/client.ts';
import { DEFAULT_BACKOFF_MS, type ConsumerHandle, type RunConsumerOptions } from './jetstream/consumer-api.ts';
import type { ConsumerRun } from './jetstream/consumer-run.ts';
import { deadLetterer } from './jetstream/dead-letter.ts';
import { messageHandler } from './jetstream/message-handling.ts';
import { pullLoop } from './jetstream/pull-loop.ts';
import { settler } from './jetstream/settle.ts';
import type { Logger } from './logger.ts';
import { wireDurableName, wireDurableSubject } from './namespace.ts';
import { brokerReplicas } from './replicas.ts';

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
  // Retried: right after its stream was scaled up, the stream's new group may not answer for a moment.
  const existing = await withRetries(() => consumerInfo(jsm, stream, config.durable));
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
 * A durable scaled up from one replica keeps its old leader without an election, and nats-server before 2.11 can
 * leave that group unable to elect once the old leader's node is lost: the durable then answers nothing until an
 * operator recreates it. Stepping the old leader down once the new followers are online makes the group elect for
 * real, after which it survives the loss of any one node. The election may pick the old leader again; what matters is
 * that the group held one.
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

export {
  DEFAULT_BACKOFF_MS,
  NonRetryableError,
  RetryLaterError,
  type ConsumerHandle,
  type DeadLetterInfo,
  type DeliveryMeta,
  type RunConsumerOptions,
} from './jetstream/consumer-api.ts';
export { consumerWatermark } from './jetstream/watermark.ts';

/**
 * Consumes `stream` through the durable `durable`: parse, handle, ack; nak with backoff on failure; dead-letter to
 * `svc.dlq.<durable>` (then `term`) when a payload is malformed, a handler throws `NonRetryableError`, or the last
 * allowed delivery fails. Survives NATS reconnects and a deleted consumer (it recreates it). Handlers must be
 * idempotent: delivery is at-least-once.
 */
export async function runConsumer<T>(opts: RunConsumerOptions<T>): Promise<ConsumerHandle> {
  const { run, consumerConfig } = consumerRunOf(opts);
  // Boot fails loudly on a bad config; later problems are logged and retried by the loop.
  await ensureConsumer(run.nc, run.stream, consumerConfig, run.log);

  const settle = settler(run.log);
  const handleMessage = messageHandler(run, settle, deadLetterer(run, settle));
  const open = (): Promise<ConsumerMessages> =>
    openMessages(run.nc, run.stream, consumerConfig, run.concurrency, run.log);
  const done = pullLoop(run, open, handleMessage, settle);
  let stopped: Promise<void> | undefined;
  return {
    durable: run.durable,
    stop(): Promise<void> {
      stopped ??= (async () => {
        run.stopping.abort();
        await run.current?.close().catch(() => undefined);
        await done;
        await Promise.allSettled([...run.inflight]);
      })();
      return stopped;
    },
  };
}

/** The consumer's set-up: its options with their defaults, checked, and the durable they declare. */
function consumerRunOf<T>(opts: RunConsumerOptions<T>): { run: ConsumerRun<T>; consumerConfig: DurableConsumerConfig } {
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
  const run: ConsumerRun<T> = {
    opts,
    nc,
    stream,
    durable,
    dlqSubject,
    schema,
    handler,
    decode,
    maxDeliver,
    backoff,
    ackWaitMs,
    concurrency,
    log,
    stopping: new AbortController(),
    inflight: new Set<Promise<void>>(),
    current: undefined,
  };
  return { run, consumerConfig };
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
  return consumer.consume({ max_messages: concurrency, ...PULL_TIMING });
}

/**
 * How a durable's pull requests are timed. nats-server 2.9 drops the pull requests a consumer's old leader held when
 * the leader moves (a node lost, a step-down), and nats.js pulls again only after two missed idle heartbeats: with its
 * defaults (15 s heartbeat, 30 s expiry, then a 30 s back-off on the consumer check) consumption stalled for 30-46 s.
 * A 1 s heartbeat notices the lost pull in 2 s and a 5 s expiry paces the re-check, so consumption resumes within a
 * few seconds. The cost: each idle durable holds a pull that expires every 5 s and gets a heartbeat every second,
 * a handful of small messages a second per process.
 */
const PULL_TIMING = { expires: 5_000, idle_heartbeat: 1_000 } as const;

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
