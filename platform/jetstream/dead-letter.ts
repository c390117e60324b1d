import type { JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { DlqHeaders, type DlqReason } from '../../contracts/streams.ts';
import type { Logger } from '../logger.ts';
import { deadLetters } from '../metrics.ts';
import { headerValue, js } from './client.ts';
import type { ConsumerRun } from './consumer-run.ts';
import type { Settle } from './settle.ts';

/** Dead-letters a message; false when the DLQ publish failed (the message is then naked for a retry). */
export interface DeadLetter<T> {
  (m: JsMsg, reason: DlqReason, error: string, mlog: Logger, payload?: T): Promise<boolean>;
  /**
   * Why a redelivered message was dead-lettered before when its `onDeadLetter` failed then: it is dead-lettered
   * again for that reason, without running the handler again. Known to this process only; after a restart the
   * message takes the handler's path once more, as any unsettled delivery does.
   */
  unfinished(m: JsMsg): { reason: DlqReason; error: string } | undefined;
}

/** How many unfinished dead letters a consumer remembers: a database down for long enough fills no memory. */
const UNFINISHED_MAX = 10_000;

/**
 * Publishes a message to the consumer's DLQ subject with why and where it came from, tells `onDeadLetter`, then terms
 * it. When `onDeadLetter` fails (its store down, say) and the server will deliver the message again, it is naked
 * instead of termed: the domain's record of the outcome (an invoice's sync marked failed, a delivery's status) is
 * retried like any other write. The DLQ publish is idempotent on the source position, so the retry adds no second
 * dead letter. On the server's last delivery it is termed all the same and the dead letter stays for replay.
 */
export function deadLetterer<T>(run: ConsumerRun<T>, settle: Settle): DeadLetter<T> {
  const { nc, durable, dlqSubject, backoff, opts } = run;
  const unfinished = new Map<number, { reason: DlqReason; error: string }>();
  const deadLetter = async (
    m: JsMsg,
    reason: DlqReason,
    error: string,
    mlog: Logger,
    payload?: T,
  ): Promise<boolean> => {
    const again = unfinished.has(m.seq);
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
    if (!again) {
      deadLetters.inc({ durable, reason });
      if (opts.alertOnDeadLetter) {
        mlog.error(
          { reason, error, dlq: dlqSubject, subject: m.subject, seq: m.seq },
          `message dead-lettered, not handled until replayed: ${m.subject} sequence ${m.seq} (${reason}); replay with \`npm run dlq -- replay ${opts.durable}\``,
        );
      } else {
        mlog.warn({ reason, error, dlq: dlqSubject }, 'message dead-lettered');
      }
    }
    if (opts.onDeadLetter) {
      try {
        await opts.onDeadLetter({ payload, reason, error, log: mlog });
      } catch (err) {
        if (m.info.deliveryCount < run.serverMaxDeliver) {
          const delay = backoff[Math.min(m.info.deliveryCount - 1, backoff.length - 1)]!;
          mlog.error({ err, reason, retry_in_ms: delay }, 'onDeadLetter failed; the message is delivered again for it');
          if (unfinished.size >= UNFINISHED_MAX) unfinished.delete(unfinished.keys().next().value!);
          unfinished.set(m.seq, { reason, error });
          settle(m, 'nak', delay);
          return true;
        }
        mlog.error({ err, reason }, 'onDeadLetter failed on the last delivery; the dead letter stays for replay');
      }
    }
    unfinished.delete(m.seq);
    settle(m, 'term');
    return true;
  };
  return Object.assign(deadLetter, { unfinished: (m: JsMsg) => unfinished.get(m.seq) });
}
