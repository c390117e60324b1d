import { randomFillSync } from 'node:crypto';

/**
 * W3C Trace Context (`traceparent: 00-<trace-id>-<span-id>-<flags>`), carried from the HTTP request through every
 * NATS hop. Each hop keeps the trace id and gets its own span id, so the logs of one request share `trace_id`
 * across gateway, actors and the actors they call. A missing or malformed value starts a new trace.
 */
export interface TraceContext {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits, not all zero: the span of whoever sent this header. */
  spanId: string;
  /** 2 hex digits (01 = sampled). */
  flags: string;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The parsed header, or undefined when absent or malformed (version ff, zero ids, wrong lengths). */
export function parseTraceparent(value: string | undefined | null): TraceContext | undefined {
  if (!value || value.length > 512) return undefined;
  const m = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!m) return undefined;
  const version = m[1]!;
  const traceId = m[2]!;
  const spanId = m[3]!;
  const flags = m[4]!;
  const rest = m[5];
  if (version === 'ff') return undefined;
  // Version 00 has exactly four fields; later versions may append more, which we ignore.
  if (version === '00' && rest !== undefined) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags };
}

export const formatTraceparent = (t: TraceContext): string => `00-${t.traceId}-${t.spanId}-${t.flags}`;

// Ids come from a pool refilled 4 KiB at a time: one random call per hop was a visible share of a request's CPU.
const pool = Buffer.alloc(4096);
let used = pool.length;
const ZERO = /^0+$/;

/** `bytes` random bytes as lower-case hex, never all zero (W3C: an all-zero id is invalid). */
function randomHex(bytes: number): string {
  for (;;) {
    if (used + bytes > pool.length) {
      randomFillSync(pool);
      used = 0;
    }
    const hex = pool.toString('hex', used, (used += bytes));
    if (!ZERO.test(hex)) return hex;
  }
}

const newSpanId = (): string => randomHex(8);

/** A new trace (this hop is its root). */
export const newTrace = (): TraceContext => ({ traceId: randomHex(16), spanId: newSpanId(), flags: '01' });

/** This hop's span inside the caller's trace, or a new trace when the caller sent none (or a malformed one). */
export function continueTrace(header: string | undefined | null): TraceContext {
  const parent = parseTraceparent(header);
  return parent ? { ...parent, spanId: newSpanId() } : newTrace();
}
