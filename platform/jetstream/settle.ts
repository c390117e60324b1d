import type { JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../logger.ts';

export type Settle = (m: JsMsg, what: 'ack' | 'nak' | 'term', delayMs?: number) => void;

/** Acks, naks (with a redelivery delay) or terms a message; a failure is logged, the server then redelivers it. */
export function settler(log: Logger): Settle {
  return (m, what, delayMs) => {
    try {
      if (what === 'ack') m.ack();
      else if (what === 'nak') m.nak(delayMs);
      // No reason string: servers before 2.11 ignore "+TERM <reason>" entirely; the reason is in the dead letter.
      else m.term();
    } catch (err) {
      log.warn({ err, seq: m.seq, what }, 'could not settle message; the server will redeliver it after ack_wait');
    }
  };
}

/** Keeps the server from redelivering while a slow handler (or onDeadLetter) is still working; stops if this process dies. */
export function keepAlive(m: JsMsg, ackWaitMs: number): NodeJS.Timeout {
  return setInterval(
    () => {
      try {
        m.working();
      } catch {
        // Connection gone: the server redelivers after ack_wait, nothing to do here.
      }
    },
    Math.max(Math.floor(ackWaitMs / 3), 50),
  );
}
