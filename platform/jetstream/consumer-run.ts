import type { ConsumerMessages } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../logger.ts';
import type { z } from 'zod';
import type { DeliveryMeta, RunConsumerOptions } from './consumer-api.ts';

/** One running consumer: its options with their defaults resolved, and the state its parts share with `stop()`. */
export interface ConsumerRun<T> {
  /** As given: the optional hooks (decode, onDeadLetter, alertOnDeadLetter) are read from here. */
  readonly opts: RunConsumerOptions<T>;
  readonly nc: NatsConnection;
  readonly stream: string;
  /** The durable's name on the wire. */
  readonly durable: string;
  readonly dlqSubject: string;
  readonly schema: z.ZodType<T>;
  readonly handler: (payload: T, meta: DeliveryMeta) => Promise<void>;
  readonly decode: (data: Uint8Array, subject: string) => unknown;
  readonly maxDeliver: number;
  readonly backoff: readonly number[];
  readonly ackWaitMs: number;
  readonly concurrency: number;
  /** The consumer's logger (durable and stream bound). */
  readonly log: Logger;
  /** Aborted by `stop()`. */
  readonly stopping: AbortController;
  /** The handlers running now. */
  readonly inflight: Set<Promise<void>>;
  /** The messages being pulled, closed by `stop()`. */
  current: ConsumerMessages | undefined;
}
