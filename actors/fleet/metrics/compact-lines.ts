import type { CompactMetricBatch } from '../../../contracts/domains/metric-wire.ts';

/**
 * A compact batch's /api/v1/import lines, written as bytes straight into the import's buffer: no string per line and
 * no UTF-8 encoding of a whole batch (building the lines as one string, then Buffer.from, made that encoding and its
 * garbage the largest part of the ingest's CPU). Each string of the batch's table is encoded once
 * for its role: names and label names as they are (the decoder checked them: [a-zA-Z0-9_:] only), label values
 * JSON-quoted. The lines are those the JSON path builds for the same samples, byte for byte (tested).
 */

const ascii = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const VALUES_TO_TIMESTAMPS = ascii('],"timestamps":[');
/** Label values JSON needs no escapes for (printable ASCII without `"` and `\`): quoted as they are. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
/** A label value as the lines carry it (both paths, JSON and compact, write it so). */
export const quoteLabelValue = (v: string): string => (PLAIN.test(v) ? `"${v}"` : JSON.stringify(v));

/** What ends each line's labels: the sender's host, environment and client (placement at ingest time), then `"values":[`. */
export const tenantText = (hostId: string, environmentId: string, clientId: string): string =>
  `,"host_id":${JSON.stringify(hostId)},"environment_id":${JSON.stringify(environmentId)},"client_id":${JSON.stringify(clientId)}},"values":[`;
/** The longest a number prints as through String (e.g. `-0.0000012345678901234567`, 25 characters). */
const NUMBER_MAX = 25;

/** tenantText as bytes, kept per placement. */
const tenantCache = new Map<string, Uint8Array>();
export function tenantBytes(hostId: string, environmentId: string, clientId: string): Uint8Array {
  const key = `${hostId}/${environmentId}/${clientId}`;
  let bytes = tenantCache.get(key);
  if (!bytes) {
    bytes = Buffer.from(tenantText(hostId, environmentId, clientId), 'utf8');
    if (tenantCache.size >= 100_000) tenantCache.clear();
    tenantCache.set(key, bytes);
  }
  return bytes;
}

/**
 * Encoded pieces by string, across batches: an agent sends the same names, label names and (mostly) label values
 * every collection, so each is encoded once rather than once per batch. Bounded: emptied when full.
 */
class PieceCache {
  private readonly map = new Map<string, Uint8Array>();
  private readonly encode: (s: string) => Uint8Array;
  constructor(encode: (s: string) => Uint8Array) {
    this.encode = encode;
  }
  get(s: string): Uint8Array {
    let bytes = this.map.get(s);
    if (!bytes) {
      bytes = this.encode(s);
      if (this.map.size >= 50_000) this.map.clear();
      this.map.set(s, bytes);
    }
    return bytes;
  }
}
const names_ = new PieceCache((s) => ascii('{"metric":{"__name__":"' + s + '"'));
const labels_ = new PieceCache((s) => ascii(',"' + s + '":'));
const values_ = new PieceCache((s) => Buffer.from(quoteLabelValue(s), 'utf8'));

/**
 * A table's strings encoded for their roles, by table: a sender's unchanged table is the same array from batch to
 * batch (StringTableMemo), so its pieces are looked up once, not per batch; they go when the table does.
 */
interface TablePieces {
  asName: (Uint8Array | undefined)[];
  asLabel: (Uint8Array | undefined)[];
  asValue: (Uint8Array | undefined)[];
}
const piecesOfTable = new WeakMap<readonly string[], TablePieces>();

/** Copies short pieces byte by byte (cheaper than TypedArray#set's call below ~16 bytes). */
function put(buf: Buffer, at: number, bytes: Uint8Array): number {
  const n = bytes.length;
  if (n > 16) {
    buf.set(bytes, at);
    return at + n;
  }
  for (let k = 0; k < n; k++) buf[at + k] = bytes[k]!;
  return at + n;
}

function putAscii(buf: Buffer, at: number, s: string): number {
  for (let k = 0; k < s.length; k++) buf[at++] = s.charCodeAt(k);
  return at;
}

function putDigits(buf: Buffer, at: number, v: number): number {
  if (v < 10) {
    buf[at] = 0x30 + v;
    return at + 1;
  }
  let digits = 1;
  for (let x = v; x >= 10; x = Math.floor(x / 10)) digits++;
  let end = at + digits;
  for (let x = v; end > at; x = Math.floor(x / 10)) buf[--end] = 0x30 + (x % 10);
  return at + digits;
}

function piecesOf(strings: readonly string[]): TablePieces {
  let pieces = piecesOfTable.get(strings);
  if (!pieces) {
    pieces = {
      asName: new Array<Uint8Array | undefined>(strings.length),
      asLabel: new Array<Uint8Array | undefined>(strings.length),
      asValue: new Array<Uint8Array | undefined>(strings.length),
    };
    piecesOfTable.set(strings, pieces);
  }
  return pieces;
}

/**
 * The most bytes a batch's lines take (numbers counted at their longest); encodes, on first use, the table's strings
 * for the roles the batch uses them in, which writeCompactLines then finds ready.
 */
export function compactLinesSize(batch: CompactMetricBatch, tenant: Uint8Array): number {
  const { strings, names, labelStart, pairs } = batch;
  const { asName, asLabel, asValue } = piecesOf(strings);
  const count = names.length;
  let size = count * (tenant.length + VALUES_TO_TIMESTAMPS.length + 2 * NUMBER_MAX + 3);
  for (let i = 0; i < count; i++) {
    const n = names[i]!;
    size += (asName[n] ??= names_.get(strings[n]!)).length;
    for (let p = labelStart[i]!; p < labelStart[i + 1]!; p += 2) {
      const k = pairs[p]!;
      const v = pairs[p + 1]!;
      size += (asLabel[k] ??= labels_.get(strings[k]!)).length + (asValue[v] ??= values_.get(strings[v]!)).length;
    }
  }
  return size;
}

/** Writes a batch's lines at `at` of `buf`, which has compactLinesSize bytes of room there; returns where they end. */
export function writeCompactLines(batch: CompactMetricBatch, tenant: Uint8Array, buf: Buffer, start: number): number {
  const { strings, names, labelStart, pairs, values, times } = batch;
  const count = names.length;
  const { asName, asLabel, asValue } = piecesOf(strings);
  // A line's end for the samples at the batch's time (most, or all).
  const collected = ascii('],"timestamps":[' + String(batch.collectedAtMs) + ']}\n');
  let at = start;
  for (let i = 0; i < count; i++) {
    at = put(buf, at, asName[names[i]!]!);
    const from = labelStart[i]!;
    const to = labelStart[i + 1]!;
    // Labels in name order, as the JSON path writes them: two (a process's pid and name, say) by one comparison.
    if (to - from === 4 && strings[pairs[from + 2]!]! < strings[pairs[from]!]!) {
      at = put(buf, at, asLabel[pairs[from + 2]!]!);
      at = put(buf, at, asValue[pairs[from + 3]!]!);
      at = put(buf, at, asLabel[pairs[from]!]!);
      at = put(buf, at, asValue[pairs[from + 1]!]!);
    } else if (to - from > 4) {
      const order: number[] = [];
      for (let p = from; p < to; p += 2) order.push(p);
      order.sort((a, b) => (strings[pairs[a]!]! < strings[pairs[b]!]! ? -1 : 1));
      for (const p of order) {
        at = put(buf, at, asLabel[pairs[p]!]!);
        at = put(buf, at, asValue[pairs[p + 1]!]!);
      }
    } else {
      for (let p = from; p < to; p += 2) {
        at = put(buf, at, asLabel[pairs[p]!]!);
        at = put(buf, at, asValue[pairs[p + 1]!]!);
      }
    }
    at = put(buf, at, tenant);
    const v = values[i]!;
    // Small integers (counts, bytes, most gauges) by digits; anything else as String prints it (what JSON would).
    if (v >= 0 && v < 1e9 && Math.floor(v) === v && !Object.is(v, -0)) at = putDigits(buf, at, v);
    else at = putAscii(buf, at, String(v));
    const t = times[i]!;
    if (Number.isNaN(t)) {
      at = put(buf, at, collected);
    } else {
      at = put(buf, at, VALUES_TO_TIMESTAMPS);
      at = putAscii(buf, at, String(t));
      buf[at++] = 0x5d; // ]
      buf[at++] = 0x7d; // }
      buf[at++] = 0x0a; // \n
    }
  }
  return at;
}
