import type { JsMsg } from '@nats-io/jetstream';
import { Headers } from '../../contracts/envelope.ts';
import { describeZodError } from '../../contracts/errors.ts';
import { parseTraceparent } from '../trace.ts';
import { NonRetryableError, RetryLaterError } from './consumer-api.ts';
import type { ConsumerRun } from './consumer-run.ts';
import type { DeadLetter } from './dead-letter.ts';
import { keepAlive, type Settle } from './settle.ts';

type Parsed<T> = { ok: true; payload: T } | { ok: false; error: string };

/** Decodes and checks a message's payload; a failure is the payload's fault (dead-lettered as malformed). */
function parsePayload<T>(run: ConsumerRun<T>, m: JsMsg): Parsed<T> {
  let decoded: unknown;
  try {
    decoded = run.decode(m.data, m.subject);
  } catch (err) {
    return { ok: false, error: run.opts.decode && err instanceof Error ? err.message : 'payload is not JSON' };
  }
  let parsed: ReturnType<typeof run.schema.safeParse>;
  try {
    parsed = run.schema.safeParse(decoded);
  } catch (err) {
    // A transform that throws rather than reporting an issue: still the payload's fault, never a redelivery loop.
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  if (!parsed.success) return { ok: false, error: describeZodError(parsed.error) };
  return { ok: true, payload: parsed.data };
}

/**
 * Handles one delivery: parse, run the handler, ack; on failure nak with backoff (or the handler's RetryLaterError
 * delay), or dead-letter when the payload is malformed, the handler throws NonRetryableError, or the delivery is the
 * last allowed one (or past it: the last attempt did not settle).
 */
export function messageHandler<T>(
  run: ConsumerRun<T>,
  settle: Settle,
  deadLetter: DeadLetter<T>,
): (m: JsMsg) => Promise<void> {
  const { opts, handler, maxDeliver, backoff, ackWaitMs, log } = run;
  return async (m) => {
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
      const parsed = parsePayload(run, m);
      if (!parsed.ok) {
        await deadLetter(m, 'malformed', parsed.error, mlog);
        return;
      }
      payload = parsed.payload;
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

    const heartbeat = keepAlive(m, ackWaitMs);
    const started = performance.now();
    try {
      const handled = handler(payload, {
        subject: m.subject,
        deliveryCount,
        msgId,
        headers: m.headers,
        streamSequence: m.seq,
        log: mlog,
        signal: run.stopping.signal,
      });
      // Only onDeadLetter needs the payload after the handler: without it, the payload is not kept alive while the
      // handler waits (with many handlers waiting, payloads that outlive the young generation are left to the full
      // collections).
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
}
