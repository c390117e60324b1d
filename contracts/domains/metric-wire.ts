/**
 * The compact wire form of a metric batch (`svc.agent.{agentID}.metrics`), beside the JSON one (MetricBatch). The spec
 * leaves the telemetry encoding to us; JSON stays accepted from any agent, and the reference agent sends this form:
 * a 300-sample batch is ~5 KB instead of ~35 KB, so the broker, the stream's 7 days on disk and the ingest all carry a
 * seventh of the bytes, and the ingest reads it without building an object per sample (JSON.parse of the agents'
 * batches and the garbage it left were the consumer's largest cost).
 *
 * Layout (little-endian; `uvarint` is LEB128, at most 5 bytes here):
 *   magic      4 bytes  0x00 'S' 'M' 0x01   (no JSON text starts with 0x00; the last byte is the version)
 *   collected  float64  collected_at, integer milliseconds since the epoch
 *   strings    uvarint count, then per string: uvarint byte length, UTF-8 bytes
 *   samples    uvarint count, then per sample:
 *                uvarint name (a string's index)
 *                uvarint head = labels << 1 | has_time
 *                labels × (uvarint label name index, uvarint label value index)
 *                float64 value
 *                float64 time_ms, when has_time
 * The string table holds every name, label name and label value once; each is checked once for the roles it is used
 * in, with the same limits as MetricBatch, and anything malformed (truncated, trailing bytes, invalid UTF-8, an index
 * out of range, a repeated label, a non-finite value, more than EXPANDED_MAX characters referred to) is refused with
 * the place named.
 */
import { z } from 'zod';
import {
  LABEL_NAME,
  LABEL_NAME_MAX,
  LABEL_VALUE_MAX,
  LABELS_PER_SAMPLE,
  METRIC_NAME,
  MetricBatchIngest,
  RESERVED_LABELS,
  SAMPLE_NAME_MAX,
  SAMPLES_PER_BATCH,
  type MetricBatch,
  type MetricBatchIn,
  type MetricSample,
} from './agent-telemetry.ts';

export const METRIC_WIRE_MAGIC = Uint8Array.of(0x00, 0x53, 0x4d, 0x01);
/** Strings a batch may carry: every sample's name and labels could differ (20,000 × 41), but far fewer do in practice. */
const STRINGS_MAX = SAMPLES_PER_BATCH * (1 + 2 * LABELS_PER_SAMPLE);

/** True when `data` is in the compact form (else it is JSON text). */
export function isCompactMetricBatch(data: Uint8Array): boolean {
  return data.length >= 4 && data[0] === 0x00 && data[1] === 0x53 && data[2] === 0x4d;
}

/** A batch as the compact form carries it: a string table and columns; samples refer to strings by index. */
export class CompactMetricBatch {
  readonly collectedAtMs: number;
  readonly strings: readonly string[];
  readonly names: readonly number[];
  readonly labelStart: readonly number[];
  readonly pairs: readonly number[];
  readonly values: readonly number[];
  readonly times: readonly number[];
  constructor(
    collectedAtMs: number,
    strings: readonly string[],
    // Plain arrays, not typed ones: a typed array of more than 64 bytes gets a backing store outside V8's heap, and
    // five of them per batch made the ingest's collector work ~3 times as hard.
    /** Per sample: its name's string index. */
    names: readonly number[],
    /** Per sample i: its labels are pairs[labelStart[i] .. labelStart[i+1]) as [name, value] string indexes. */
    labelStart: readonly number[],
    pairs: readonly number[],
    values: readonly number[],
    /** Per sample: time_ms, or NaN for the batch's collected_at. */
    times: readonly number[],
  ) {
    this.collectedAtMs = collectedAtMs;
    this.strings = strings;
    this.names = names;
    this.labelStart = labelStart;
    this.pairs = pairs;
    this.values = values;
    this.times = times;
  }

  get size(): number {
    return this.names.length;
  }

  get collectedAt(): string {
    return new Date(this.collectedAtMs).toISOString();
  }

  /** The batch as MetricBatch (objects), with labels in the order they were sent (tests, tools). */
  toBatch(): MetricBatch {
    const samples: MetricSample[] = [];
    for (let i = 0; i < this.size; i++) {
      const entries: [string, string][] = [];
      for (let p = this.labelStart[i]!; p < this.labelStart[i + 1]!; p += 2)
        entries.push([this.strings[this.pairs[p]!]!, this.strings[this.pairs[p + 1]!]!]);
      const labels = Object.fromEntries(entries);
      const t = this.times[i]!;
      samples.push({
        name: this.strings[this.names[i]!]!,
        value: this.values[i]!,
        ...(Number.isNaN(t) ? {} : { time_ms: t }),
        labels,
      });
    }
    return { collected_at: this.collectedAt, samples };
  }
}

/** A compact batch the ingest refuses, with where and why. */
export class MetricWireError extends Error {
  override readonly name = 'MetricWireError';
}

const RESERVED = new Set<string>(RESERVED_LABELS);
// ignoreBOM: a string starting with U+FEFF keeps it (as JSON.parse keeps it), rather than losing it silently.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
// What a string has been checked for, so each is checked once per role however many samples use it.
// (Label values have no check of their role: their length is checked with the table.)
const AS_NAME = 1;
const AS_LABEL = 2;

/** Where a read failed, built only then (a template per read was most of the decoder's garbage). */
const place = (what: string, sample: number): string => (sample < 0 ? what : `sample ${sample}: ${what}`);

class Reader {
  pos = 4;
  private readonly view: DataView;
  private readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  uvarint(what: string, sample = -1): number {
    const b = this.bytes;
    // One byte (below 128) is the common case: string indexes and label counts.
    if (this.pos < b.length && b[this.pos]! < 0x80) return b[this.pos++]!;
    let result = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      if (this.pos >= b.length) throw new MetricWireError(`truncated at ${place(what, sample)}`);
      const byte = b[this.pos++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return result;
    }
    throw new MetricWireError(`${place(what, sample)}: varint longer than 5 bytes`);
  }
  float64(what: string, sample = -1): number {
    if (this.pos + 8 > this.bytes.length) throw new MetricWireError(`truncated at ${place(what, sample)}`);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }
  string(index: number): string {
    const len = this.uvarint('string', index);
    // UTF-8 takes at most 3 bytes per UTF-16 unit: anything longer is over the limit whatever it holds.
    if (len > LABEL_VALUE_MAX * 3)
      throw new MetricWireError(`string ${index}: longer than ${LABEL_VALUE_MAX} characters`);
    const start = this.pos;
    const end = start + len;
    if (end > this.bytes.length) throw new MetricWireError(`truncated at string ${index}`);
    this.pos = end;
    const b = this.bytes;
    let ascii = true;
    for (let i = start; i < end; i++) {
      if (b[i]! >= 0x80) {
        ascii = false;
        break;
      }
    }
    if (ascii) return String.fromCharCode.apply(null, b.subarray(start, end) as unknown as number[]);
    try {
      return utf8.decode(b.subarray(start, end));
    } catch {
      throw new MetricWireError(`string ${index} is not valid UTF-8`);
    }
  }
}

/**
 * One sender's last string table, kept by a reader between batches: an agent sends the same names and labels every
 * collection, and a table equal byte for byte to the last one is taken as it was read then (its strings, and what
 * they were checked for) instead of being decoded and checked again. Equal bytes read the same, so nothing a fresh
 * read would refuse gets through.
 */
export class StringTableMemo {
  bytes: Uint8Array | undefined = undefined;
  strings: readonly string[] = [];
  checked: Uint8Array = new Uint8Array(0);
}

/** 9999-12-31T23:59:59.999Z: later times have no RFC 3339 form, which MetricBatch's collected_at needs. */
const LAST_ISO_MS = 253_402_300_799_999;
/**
 * The most characters of names and labels a batch's samples may refer to in all: a sample refers to strings by
 * index, so a 1 MB message could otherwise stand for gigabytes of lines (20,000 samples × 20 labels of 1,024
 * characters); its JSON form could never be sent at all beyond the broker's message size.
 */
export const EXPANDED_MAX = 8 * 1024 * 1024;

/** Tables larger than this are read each time rather than kept. */
const MEMO_TABLE_MAX_BYTES = 64 * 1024;

/**
 * Reads a compact batch, refusing (MetricWireError) what MetricBatch would refuse and anything malformed. With a
 * memo (one per sender), an unchanged string table is not read again.
 */
export function decodeCompactMetricBatch(data: Uint8Array, memo?: StringTableMemo): CompactMetricBatch {
  if (!isCompactMetricBatch(data)) throw new MetricWireError('not a compact metric batch (bad magic)');
  if (data[3] !== METRIC_WIRE_MAGIC[3])
    throw new MetricWireError(
      `compact metric batch version ${data[3]} is not supported (expected ${METRIC_WIRE_MAGIC[3]})`,
    );
  const r = new Reader(data);
  const collectedAtMs = r.float64('collected_at');
  if (!Number.isSafeInteger(collectedAtMs) || collectedAtMs < 0 || collectedAtMs > LAST_ISO_MS)
    throw new MetricWireError('collected_at: not a time in milliseconds since the epoch up to the year 9999');
  const tableStart = r.pos;
  let strings: readonly string[];
  let checked: Uint8Array;
  const known = memo?.bytes;
  if (
    memo &&
    known &&
    tableStart + known.length <= data.length &&
    Buffer.from(data.buffer, data.byteOffset + tableStart, known.length).equals(known)
  ) {
    strings = memo.strings;
    checked = memo.checked;
    r.pos = tableStart + known.length;
  } else {
    const stringCount = r.uvarint('the string count');
    if (stringCount > STRINGS_MAX) throw new MetricWireError(`at most ${STRINGS_MAX} strings`);
    // Every string takes at least one byte, so a count beyond what is left is refused before allocating for it.
    if (stringCount > data.length - r.pos) throw new MetricWireError('truncated in the string table');
    const read: string[] = new Array<string>(stringCount);
    for (let i = 0; i < stringCount; i++) {
      const s = r.string(i);
      if (s.length > LABEL_VALUE_MAX)
        throw new MetricWireError(`string ${i}: longer than ${LABEL_VALUE_MAX} characters`);
      read[i] = s;
    }
    strings = read;
    // Role checks are recorded as samples use the strings; a memo's record is only kept once the batch was accepted.
    checked = new Uint8Array(stringCount);
  }
  const stringCount = strings.length;
  const tableEnd = r.pos;
  const count = r.uvarint('the sample count');
  if (count < 1 || count > SAMPLES_PER_BATCH) throw new MetricWireError(`samples: between 1 and ${SAMPLES_PER_BATCH}`);
  // A sample is at least 10 bytes (name, head, value).
  if (count * 10 > data.length - r.pos) throw new MetricWireError('truncated in the samples');
  const names: number[] = [];
  const labelStart: number[] = [];
  const pairs: number[] = [];
  let used = 0;
  const values: number[] = [];
  const times: number[] = [];
  let expanded = 0;
  const index = (i: number, what: string): number => {
    const at = r.uvarint(what, i);
    if (at >= stringCount) throw new MetricWireError(`sample ${i}: ${what} refers to string ${at}, beyond the table`);
    return at;
  };
  for (let i = 0; i < count; i++) {
    const name = index(i, 'name');
    if ((checked[name]! & AS_NAME) === 0) {
      const s = strings[name]!;
      if (s.length > SAMPLE_NAME_MAX || !METRIC_NAME.test(s))
        throw new MetricWireError(
          `sample ${i}: name ${JSON.stringify(s.slice(0, 64))}: metric names are [a-zA-Z_:][a-zA-Z0-9_:]*, at most ${SAMPLE_NAME_MAX} characters`,
        );
      checked[name]! |= AS_NAME;
    }
    names.push(name);
    expanded += strings[name]!.length;
    const head = r.uvarint('head', i);
    // Division rather than bit operations: a 5-byte varint goes beyond 32 bits.
    const labels = Math.floor(head / 2);
    if (labels > LABELS_PER_SAMPLE)
      throw new MetricWireError(`sample ${i}: at most ${LABELS_PER_SAMPLE} labels per sample`);
    labelStart.push(used);
    for (let l = 0; l < labels; l++) {
      const key = index(i, 'label name');
      const value = index(i, 'label value');
      if ((checked[key]! & AS_LABEL) === 0) {
        const s = strings[key]!;
        if (s.length > LABEL_NAME_MAX || !LABEL_NAME.test(s))
          throw new MetricWireError(
            `sample ${i}: label name ${JSON.stringify(s.slice(0, 64))}: label names are [a-zA-Z_][a-zA-Z0-9_]*, at most ${LABEL_NAME_MAX} characters`,
          );
        if (RESERVED.has(s))
          throw new MetricWireError(`sample ${i}: labels ${RESERVED_LABELS.join(', ')} are set by the server`);
        checked[key]! |= AS_LABEL;
      }
      for (let p = labelStart[i]!; p < used; p += 2)
        if (pairs[p] === key) throw new MetricWireError(`sample ${i}: label ${strings[key]} given twice`);
      expanded += strings[key]!.length + strings[value]!.length;
      // MetricBatch drops a label named __proto__ (JSON gives it, a record cannot hold it): so does this form.
      if (strings[key] === '__proto__') continue;
      pairs.push(key, value);
      used += 2;
    }
    if (expanded > EXPANDED_MAX)
      throw new MetricWireError(
        `sample ${i}: the batch's names and labels come to more than ${EXPANDED_MAX} characters`,
      );
    const value = r.float64('value', i);
    if (!Number.isFinite(value)) throw new MetricWireError(`sample ${i}: value is not a finite number`);
    values.push(value);
    if (head % 2 === 1) {
      const t = r.float64('time_ms', i);
      if (!Number.isSafeInteger(t) || t < 0)
        throw new MetricWireError(`sample ${i}: time_ms is not a non-negative integer`);
      times.push(t);
    } else {
      times.push(NaN);
    }
  }
  labelStart.push(used);
  if (r.pos !== data.length) throw new MetricWireError(`${data.length - r.pos} bytes after the last sample`);
  if (memo && strings !== memo.strings && tableEnd - tableStart <= MEMO_TABLE_MAX_BYTES) {
    memo.bytes = data.slice(tableStart, tableEnd);
    memo.strings = strings;
    memo.checked = checked;
  }
  return new CompactMetricBatch(collectedAtMs, strings, names, labelStart, pairs, values, times);
}

class Writer {
  bytes = new Uint8Array(4096);
  view = new DataView(this.bytes.buffer);
  pos = 0;
  private room(n: number): void {
    if (this.pos + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.pos + n));
    grown.set(this.bytes.subarray(0, this.pos));
    this.bytes = grown;
    this.view = new DataView(grown.buffer);
  }
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.bytes.set(b, this.pos);
    this.pos += b.length;
  }
  uvarint(n: number): void {
    this.room(5);
    while (n >= 0x80) {
      this.bytes[this.pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    this.bytes[this.pos++] = n;
  }
  float64(v: number): void {
    this.room(8);
    this.view.setFloat64(this.pos, v, true);
    this.pos += 8;
  }
}

const utf8Encoder = new TextEncoder();

/**
 * A batch in the compact form. The caller gives a batch MetricBatch accepts (the agent checks its own payloads);
 * what this cannot carry (a `collected_at` that is not a time) throws.
 */
export function encodeCompactMetricBatch(batch: MetricBatchIn): Uint8Array {
  const collected = Date.parse(batch.collected_at);
  if (!Number.isFinite(collected)) throw new RangeError('collected_at is not a time');
  const table = new Map<string, number>();
  const order: string[] = [];
  const ref = (s: string): number => {
    let at = table.get(s);
    if (at === undefined) {
      at = order.length;
      table.set(s, at);
      order.push(s);
    }
    return at;
  };
  // Indexes first (the table precedes the samples on the wire).
  const refs: number[] = [];
  for (const s of batch.samples) {
    refs.push(ref(s.name));
    const labels = s.labels ?? {};
    for (const k in labels) {
      if (!Object.hasOwn(labels, k)) continue;
      refs.push(ref(k), ref(labels[k]!));
    }
  }
  const w = new Writer();
  w.raw(METRIC_WIRE_MAGIC);
  w.float64(collected);
  w.uvarint(order.length);
  for (const s of order) {
    const b = utf8Encoder.encode(s);
    w.uvarint(b.length);
    w.raw(b);
  }
  w.uvarint(batch.samples.length);
  let at = 0;
  for (const s of batch.samples) {
    w.uvarint(refs[at++]!);
    const labels = s.labels ?? {};
    let n = 0;
    for (const k in labels) if (Object.hasOwn(labels, k)) n++;
    const hasTime = s.time_ms !== undefined;
    w.uvarint((n << 1) | (hasTime ? 1 : 0));
    for (let l = 0; l < n; l++) {
      w.uvarint(refs[at++]!);
      w.uvarint(refs[at++]!);
    }
    w.float64(s.value);
    if (hasTime) w.float64(s.time_ms!);
  }
  return w.bytes.slice(0, w.pos);
}

const jsonText = new TextDecoder();

/**
 * A metric message's payload as the ingest reads it: the compact form when it starts with its magic, JSON text
 * otherwise. Throws with a message fit for the dead letter when it is neither.
 */
export function decodeMetricPayload(data: Uint8Array, memo?: StringTableMemo): unknown {
  if (isCompactMetricBatch(data)) return decodeCompactMetricBatch(data, memo);
  try {
    return JSON.parse(jsonText.decode(data)) as unknown;
  } catch {
    throw new MetricWireError('payload is neither JSON nor a compact metric batch');
  }
}

/** A decoded metric payload: a compact batch as it is (the decoder checked it), JSON as MetricBatchIngest takes it. */
export const MetricBatchWire: z.ZodType<MetricBatch | CompactMetricBatch> = z
  .unknown()
  .transform((input, ctx): MetricBatch | CompactMetricBatch => {
    if (input instanceof CompactMetricBatch) return input;
    const parsed = MetricBatchIngest.safeParse(input);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ ...issue });
    return z.NEVER;
  });
