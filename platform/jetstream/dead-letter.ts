import type { JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { DlqHeaders, type DlqReason } from '../../contracts/streams.ts';
import type { Logger } from '../logger.ts';
import { deadLetters } from '../metrics.ts';
import { headerValue, js } from './client.ts';
import type { ConsumerRun } from './consumer-run.ts';
import type { Settle } from './settle.ts';

/** Dead-letters a message; false when the DLQ publish failed (the message is then naked for a retry). */
export type DeadLetter<T> = (m: JsMsg, reason: DlqReason, error: string, mlog: Logger, payload?: T) => Promise<boolean>;

/**
 * Publishes a message to the consumer's DLQ subject with why and where it came from, then terms it and tells
 * `onDeadLetter`.
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
}
