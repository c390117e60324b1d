import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { DlqHeaders, dlqSubjectFor, streams } from '../contracts/streams.ts';
import type { Logger } from './logger.ts';
import { wireDurableName } from './namespace.ts';

/** One dead letter as the DLQ stream holds it. */
export interface DeadLetter {
  /** Its sequence in SVC_DLQ: what `replay` selects by. */
  seq: number;
  /** Where it was first published (and where a replay publishes it again). */
  subject: string;
  reason: string;
  error: string;
  /** Its sequence in the stream it came from. */
  sourceSeq: string;
  at: string;
}

/** Only subjects of the streams consumers read are replayed to: a DLQ header is not a licence to publish anywhere. */
const REPLAYABLE = /^svc\.(evt|work|agent)\./;

const DLQ = streams.SVC_DLQ.name;

/** The dead letters of `durable` (the logical name; the namespace is applied here), oldest first. */
export async function listDeadLetters(nc: NatsConnection, durable: string): Promise<DeadLetter[]> {
  const jsm = await jetstreamManager(nc);
  const subject = dlqSubjectFor(wireDurableName(durable));
  const info = await jsm.streams.info(DLQ, { subjects_filter: subject });
  const count = info.state.subjects?.[subject] ?? 0;
  const out: DeadLetter[] = [];
  if (count === 0) return out;
  // An ordered (ephemeral) consumer reads them in order; the count read first bounds it to what is there now.
  const c = await jetstream(nc).consumers.get(DLQ, { filter_subjects: subject });
  try {
    while (out.length < count) {
      const m = await c.next({ expires: 2_000 });
      if (!m) break;
      const h = m.headers;
      out.push({
        seq: m.seq,
        subject: h?.get(DlqHeaders.subject) ?? '',
        reason: h?.get(DlqHeaders.reason) ?? '',
        error: h?.get(DlqHeaders.error) ?? '',
        sourceSeq: h?.get(DlqHeaders.streamSeq) ?? '',
        at: m.time.toISOString(),
      });
    }
  } finally {
    await c.delete().catch(() => undefined);
  }
  return out;
}

export interface ReplayResult {
  replayed: number[];
  /** DLQ sequences left where they are, with why (no such dead letter, a subject that is not replayable). */
  skipped: { seq: number; why: string }[];
}

/**
 * Publishes dead letters of `durable` again on their original subject (all of them, or the DLQ sequences in `only`),
 * with their original headers, and removes each from the DLQ once the stream has acknowledged it. Every consumer of
 * that subject sees it again, so this relies on handlers being idempotent, as delivery is at-least-once anyway. Only
 * the dead letters present when it starts are replayed: one that fails again is dead-lettered anew, not looped on.
 * The publish id is the DLQ position, so a replay interrupted between publish and removal, and run again, is stored once.
 */
export async function replayDeadLetters(
  nc: NatsConnection,
  durable: string,
  log: Logger,
  only?: readonly number[],
): Promise<ReplayResult> {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const wired = wireDurableName(durable);
  const present = await listDeadLetters(nc, durable);
  const wanted = only ? new Set(only) : undefined;
  const result: ReplayResult = { replayed: [], skipped: [] };
  for (const seq of wanted ?? [])
    if (!present.some((d) => d.seq === seq))
      result.skipped.push({ seq, why: `no dead letter of ${durable} at this sequence` });
  for (const d of present) {
    if (wanted && !wanted.has(d.seq)) continue;
    if (!REPLAYABLE.test(d.subject)) {
      result.skipped.push({ seq: d.seq, why: `subject ${JSON.stringify(d.subject)} is not replayable` });
      continue;
    }
    const m = await jsm.streams.getMessage(DLQ, { seq: d.seq });
    if (!m) continue; // removed meanwhile (another replay)
    const h = natsHeaders();
    for (const [k, values] of m.header) {
      if (Object.values(DlqHeaders).some((name) => name.toLowerCase() === k.toLowerCase())) continue;
      for (const v of values) h.append(k, v);
    }
    await js.publish(d.subject, m.data, { headers: h, msgID: `replay:${wired}:${d.seq}` });
    await jsm.streams.deleteMessage(DLQ, d.seq);
    log.info(
      { durable: wired, dlq_seq: d.seq, subject: d.subject, source_seq: d.sourceSeq, reason: d.reason },
      'dead letter replayed',
    );
    result.replayed.push(d.seq);
  }
  return result;
}
