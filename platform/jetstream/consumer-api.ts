import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';
import type { DlqReason } from '../../contracts/streams.ts';
import type { Logger } from '../logger.ts';

// What a consumer run by runConsumer (../jetstream.ts) is given, and what its handler may throw.

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
   * "failed" state), before the message is termed. When it throws, it is tried again in this process for about a
   * minute (ON_DEAD_LETTER_RETRY_MS) with the message kept from redelivery: it must be idempotent.
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
