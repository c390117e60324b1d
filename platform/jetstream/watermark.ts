import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { wireDurableName } from '../namespace.ts';

/**
 * The broker's time up to which a durable has handled every message it was given: now when it holds nothing unacked
 * and nothing undelivered, else the store time of its ack floor (every message before it is acked). Undefined when
 * the consumer cannot say (its leader is being elected, the broker is out of reach): a caller that judges by what the
 * consumer has seen must then wait. A durable that does not exist has nothing behind: now.
 *
 * The consumer's leader answers, so this costs a consumer info and, when behind, a message read.
 */
export async function consumerWatermark(
  nc: NatsConnection,
  stream: string,
  durable: string,
  timeoutMs = 2_000,
): Promise<number | undefined> {
  try {
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs, checkAPI: false });
    const info = await jsm.consumers.info(stream, wireDurableName(durable));
    if (info.num_pending === 0 && info.num_ack_pending === 0) return Date.now();
    const floor = info.ack_floor.stream_seq;
    // Nothing acked since the durable was made: it has been behind since its creation.
    if (floor === 0) return Date.parse(info.created);
    const m = await jsm.streams.getMessage(stream, { seq: floor });
    return m ? m.time.getTime() : undefined;
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound) return Date.now();
    return undefined;
  }
}
