import { setTimeout as wait } from 'node:timers/promises';
import type { JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { DlqHeaders, type DlqReason } from '../../contracts/streams.ts';
import type { Logger } from '../logger.ts';
import { deadLetters } from '../metrics.ts';
import { headerValue, js } from './client.ts';
import type { ConsumerRun } from './consumer-run.ts';
import { keepAlive, type Settle } from './settle.ts';
import type { DeadLetterInfo } from './consumer-api.ts';

/** Dead-letters a message; false when the DLQ publish failed (the message is then naked for a retry). */
export type DeadLetter<T> = (m: JsMsg, reason: DlqReason, error: string, mlog: Logger, payload?: T) => Promise<boolean>;

/**
 * The pauses between tries of a failing `onDeadLetter` (about a minute in all), the message kept from redelivery
 * meanwhile: long enough to ride out a database failover or restart.
 */
export const ON_DEAD_LETTER_RETRY_MS: readonly number[] = [250, 1_000, 3_000, 8_000, 15_000, 30_000];

/**
 * Publishes a message to the consumer's DLQ subject with why and where it came from, tells `onDeadLetter`, then terms
 * it. A failing `onDeadLetter` (its store down for a moment) is tried again in this process with the message kept
 * from redelivery, so the domain's record of the outcome (an invoice's sync marked failed, a delivery's status) is not
 * lost to a passing error; nothing is redelivered, so no other instance runs the handler again meanwhile. Once the
 * tries are spent, or the consumer stops, it is termed all the same and the dead letter stays for replay.
 */
export function deadLetterer<T>(run: ConsumerRun<T>, settle: Settle): DeadLetter<T> {
  const { nc, durable, dlqSubject, backoff, opts } = run;
  return async (m, reason, error, mlog, payload) => {
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
    } catch (err) {
      mlog.error({ err, reason, error }, 'dead-letter publish failed; the message will be retried');
      settle(m, 'nak', backoff[backoff.length - 1]);
      return false;
    }
    deadLetters.inc({ durable, reason });
    if (opts.alertOnDeadLetter) {
      mlog.error(
        { reason, error, dlq: dlqSubject, subject: m.subject, seq: m.seq },
        `message dead-lettered, not handled until replayed: ${m.subject} sequence ${m.seq} (${reason}); replay with \`npm run dlq -- replay ${opts.durable}\``,
      );
    } else {
      mlog.warn({ reason, error, dlq: dlqSubject }, 'message dead-lettered');
    }
    if (opts.onDeadLetter) await tellDeadLetter(run, m, { payload, reason, error, log: mlog });
    settle(m, 'term');
    return true;
  };
}

/** Runs `onDeadLetter` until it succeeds, its tries are spent or the consumer stops, the message kept alive. */
async function tellDeadLetter<T>(run: ConsumerRun<T>, m: JsMsg, info: DeadLetterInfo<T>): Promise<void> {
  const alive = keepAlive(m, run.ackWaitMs);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await run.opts.onDeadLetter!(info);
        return;
      } catch (err) {
        const delay = ON_DEAD_LETTER_RETRY_MS[attempt];
        if (delay === undefined || run.stopping.signal.aborted) {
          info.log.error({ err, reason: info.reason }, 'onDeadLetter failed; the dead letter stays for replay');
          return;
        }
        info.log.warn({ err, reason: info.reason, retry_in_ms: delay }, 'onDeadLetter failed; trying again');
        await wait(delay, undefined, { signal: run.stopping.signal }).catch(() => undefined);
      }
    }
  } finally {
    clearInterval(alive);
  }
}
