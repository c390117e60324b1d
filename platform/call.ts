import { NoRespondersError, RequestError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import type { CallerContext } from '../contracts/context.ts';
import { DomainError, ErrorBody } from '../contracts/errors.ts';
import type { Catalogue, RequestIn, ReplyOut, SubjectName } from '../contracts/subject.ts';
import { wireRequestSubject } from './namespace.ts';
import { RequestHeaders } from './request-headers.ts';
import { RequestMux } from './request-mux.ts';
import type { ContextSigner } from './signing.ts';
import { formatTraceparent, newTrace, parseTraceparent } from './trace.ts';

export interface CallOptions {
  /** Absolute deadline (epoch ms); the request is abandoned with `timeout` when it passes. */
  deadline?: number;
  timeoutMs?: number;
  /** W3C `traceparent` of the calling span; absent or malformed, the call starts a new trace. */
  traceparent?: string;
  /**
   * This call is safe to repeat although its subject is not marked `retry: 'safe'` (e.g. a write carrying an
   * idempotency key): a slow attempt is repeated once, as for safe subjects.
   */
  repeatable?: boolean;
}

/**
 * A safe call still unanswered after this long (or a third of its time, if less) is sent once more: NATS never tells a
 * requester that the instance holding its request died, and the queue group routes the repeat to a live instance.
 * The first attempt stays open too, so a merely slow answer still counts.
 */
export const REPEAT_AFTER_MS = 1_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Typed request-reply over the subject catalogue: a wrong payload for a subject is a compile error. Every request is
 * signed (signing.ts): the caller vouches for the context it sends.
 */
export class Caller<C extends Catalogue> {
  private readonly getConnection: () => NatsConnection | undefined;
  readonly catalogue: C;
  private readonly signer: ContextSigner;
  private readonly defaultTimeoutMs: number;
  private readonly repeatAfterMs: number;
  constructor(
    getConnection: () => NatsConnection | undefined,
    catalogue: C,
    signer: ContextSigner,
    defaultTimeoutMs = 10_000,
    repeatAfterMs = REPEAT_AFTER_MS,
  ) {
    this.getConnection = getConnection;
    this.catalogue = catalogue;
    this.signer = signer;
    this.defaultTimeoutMs = defaultTimeoutMs;
    this.repeatAfterMs = repeatAfterMs;
  }

  async call<S extends SubjectName<C>>(
    subject: S,
    input: RequestIn<C, S>,
    ctx: CallerContext,
    opts: CallOptions = {},
  ): Promise<ReplyOut<C, S>> {
    return parseReply(await this.send(subject, input, ctx, opts), subject) as ReplyOut<C, S>;
  }

  /**
   * The same call for a caller that only forwards the answer (the gateways): a successful reply comes back as the
   * JSON bytes of `{"data": …}` cut out of the actor's envelope, never parsed and serialized again (for a board of
   * 500 requests or a 361-point chart, that was most of the gateway's work); `{}` when the reply has no data. Errors
   * are thrown as `call` throws them.
   */
  async callForwarded<S extends SubjectName<C>>(
    subject: S,
    input: RequestIn<C, S>,
    ctx: CallerContext,
    opts: CallOptions = {},
  ): Promise<Uint8Array> {
    const raw = await this.send(subject, input, ctx, opts);
    // serve.ts writes `{"ok":true,"data":…}` (keys in that order) or `{"ok":true}` for no data.
    if (startsWith(raw, OK_DATA) && raw[raw.length - 1] === CLOSE_BRACE) {
      // The comma before `"data"` becomes the body's opening brace, in the reply's own bytes: a copy of a large reply
      // (a 340 KB board) was garbage outside V8's heap, which brings its old-generation collections forward.
      const body = raw.subarray(OK_PREFIX.length - 1);
      body[0] = OPEN_BRACE;
      return body;
    }
    parseReply(raw, subject);
    return EMPTY_OBJECT;
  }

  /**
   * callForwarded for a subject answering a page (`{ items, total, page, per_page }`): the list envelope
   * `{"data":[…],"meta":{"total":…,"page":…,"per_page":…}}` as bytes, the items cut out of the actor's reply
   * unparsed. That needs the reply in the key order every list handler writes (pageOf's: items first, then the three
   * numbers); a reply in another order is parsed and rendered instead, with the same result.
   */
  async callForwardedPage<S extends SubjectName<C>>(
    subject: S,
    input: RequestIn<C, S>,
    ctx: CallerContext,
    opts: CallOptions = {},
  ): Promise<Uint8Array> {
    const raw = await this.send(subject, input, ctx, opts);
    const cut = cutPage(raw);
    if (cut) return cut;
    const page = parseReply(raw, subject) as { items: unknown; total: unknown; page: unknown; per_page: unknown };
    return encoder.encode(
      JSON.stringify({ data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } }),
    );
  }

  private async send<S extends SubjectName<C>>(
    subject: S,
    input: RequestIn<C, S>,
    ctx: CallerContext,
    opts: CallOptions,
  ): Promise<Uint8Array> {
    if (!Object.hasOwn(this.catalogue, subject)) throw new DomainError('internal_error', `unknown subject ${subject}`);
    const nc = this.getConnection();
    if (!nc) throw new DomainError('unavailable', 'message broker unavailable');
    const deadline = opts.deadline ?? Date.now() + (opts.timeoutMs ?? this.defaultTimeoutMs);
    const timeout = deadline - Date.now();
    if (timeout <= 0) throw new DomainError('timeout', `deadline passed before ${subject} was called`);
    const wire = wireRequestSubject(subject);
    // Buffer.from rather than TextEncoder: cheaper for an envelope of this size (small strings come from Node's pool).
    const payload = Buffer.from(JSON.stringify({ ctx, input }), 'utf8');
    const signed = this.signer.sign(wire, ctx.request_id, deadline, payload);
    const h = new RequestHeaders(
      ctx.request_id,
      String(deadline),
      formatTraceparent(parseTraceparent(opts.traceparent) ?? newTrace()),
      signed.signedAt,
      signed.signature,
    );
    let raw: Uint8Array;
    try {
      // A repeat carries the same signed envelope: it is the same request, within the same replay window.
      const mux = RequestMux.of(nc);
      const send = (ms: number): Promise<Uint8Array> => mux.request(wire, payload, { timeout: ms, headers: h });
      const repeatAfter = Math.min(this.repeatAfterMs, timeout / 3);
      raw =
        (this.catalogue[subject]!.retry === 'safe' || opts.repeatable === true) && repeatAfter >= 50
          ? await sendTwice(send, deadline, repeatAfter)
          : await send(timeout);
    } catch (err) {
      throw translateNatsError(err, subject);
    }
    return raw;
  }
}

/** `{"ok":true,` then `"data":…}`: the forwarded body is `{` followed by the rest. */
const OK_PREFIX = encoder.encode('{"ok":true,');
const OK_DATA = encoder.encode('{"ok":true,"data":');
const OPEN_BRACE = '{'.charCodeAt(0);
const CLOSE_BRACE = '}'.charCodeAt(0);
const EMPTY_OBJECT = encoder.encode('{}');

const OK_ITEMS = encoder.encode('{"ok":true,"data":{"items":');
const DATA_OPEN = encoder.encode('{"data":');
/** How far the items move: the list envelope's tail (`,"meta":{…}}`) is this much longer than the reply's. */
const PAGE_SHIFT = '"meta":{'.length;
/** The end of a page reply after its items: the three numbers, then the data's and the envelope's braces. */
const PAGE_TAIL = /\],"total":(\d+),"page":(\d+),"per_page":(\d+)\}\}$/;

/**
 * `{"ok":true,"data":{"items":[…],"total":T,"page":P,"per_page":N}}` as `{"data":[…],"meta":{…}}`, or undefined
 * when the reply is laid out otherwise (an error, another key order). Only the last bytes are read: the tail's
 * pattern is anchored at the end and holds nothing but digits, so its `]` is the one closing the items.
 *
 * Rewritten in the reply's own bytes, without a copy of the items: the envelope's head is 19 bytes shorter than the
 * reply's and its tail 8 longer, so the items move 8 bytes towards the start and the result ends where the reply did.
 */
function cutPage(raw: Uint8Array): Uint8Array | undefined {
  if (!startsWith(raw, OK_ITEMS)) return undefined;
  const from = Math.max(OK_ITEMS.length, raw.length - 80);
  const tail = Buffer.from(raw.buffer, raw.byteOffset + from, raw.length - from).toString('latin1');
  const m = PAGE_TAIL.exec(tail);
  if (!m) return undefined;
  const itemsEnd = from + m.index + 1;
  const meta = Buffer.from(`,"meta":{"total":${m[1]},"page":${m[2]},"per_page":${m[3]}}}`, 'latin1');
  const start = OK_ITEMS.length - PAGE_SHIFT - DATA_OPEN.length;
  raw.copyWithin(OK_ITEMS.length - PAGE_SHIFT, OK_ITEMS.length, itemsEnd);
  raw.set(DATA_OPEN, start);
  raw.set(meta, itemsEnd - PAGE_SHIFT);
  return raw.subarray(start, itemsEnd - PAGE_SHIFT + meta.length);
}

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}

/** The data of a successful reply envelope, or the DomainError of a failed one, thrown. */
function parseReply(raw: Uint8Array, subject: string): unknown {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(raw));
  } catch {
    throw new DomainError('internal_error', `reply on ${subject} is not JSON`);
  }
  // Replies come from actors, which validated them against the subject's schema: only the envelope is checked.
  const reply = body as {
    ok?: unknown;
    data?: unknown;
    error?: { code?: unknown; message?: unknown; details?: unknown };
  } | null;
  if (reply?.ok === true) return reply.data;
  const error = ErrorBody.safeParse(reply?.ok === false ? reply.error : undefined);
  if (!error.success) throw new DomainError('internal_error', `malformed reply on ${subject}`);
  throw new DomainError(error.data.code, error.data.message, error.data.details);
}

/**
 * One attempt, and a second one when the first has not answered after `repeatAfterMs` or failed early (no
 * responders); the first answer of either wins. Both run to the deadline; the call fails only when both failed, with
 * the first attempt's reason. One promise and one timer per call (Promise.any over two promises of their own was a
 * visible share of a safe call's CPU).
 */
export function sendTwice(
  send: (ms: number) => Promise<Uint8Array>,
  deadline: number,
  repeatAfterMs: number,
): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    let done = false;
    let repeated = false;
    /** Attempts sent and not yet settled. */
    let open = 1;
    let firstError: unknown;
    const win = (data: Uint8Array): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(data);
    };
    const lose = (err: unknown, first: boolean): void => {
      if (done) return;
      if (first) firstError = err;
      open--;
      // The first failed early: the repeat goes now rather than at its time.
      if (first && !repeated) repeat();
      if (open > 0) return;
      done = true;
      clearTimeout(timer);
      reject(firstError);
    };
    const repeat = (): void => {
      if (repeated || done) return;
      repeated = true;
      clearTimeout(timer);
      const left = deadline - Date.now();
      // No time left: nothing is sent, and the first attempt's outcome decides.
      if (left <= 0) return;
      open++;
      send(left).then(win, (err: unknown) => lose(err, false));
    };
    // Sent before the repeat is armed: a send that throws rejects this promise and leaves no timer behind.
    const first = send(deadline - Date.now());
    // The callbacks above read `timer` only once the first attempt settles or the timer fires, both after this line.
    const timer = setTimeout(repeat, repeatAfterMs);
    first.then(win, (err: unknown) => lose(err, true));
  });
}

function translateNatsError(err: unknown, subject: string): DomainError {
  if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders()))
    return new DomainError('unavailable', `no actor is serving ${subject}`);
  if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError))
    return new DomainError('timeout', `${subject} did not answer before the deadline`);
  if (err instanceof Error && /no responders/i.test(err.message))
    return new DomainError('unavailable', `no actor is serving ${subject}`);
  if (err instanceof Error && /timeout/i.test(err.message))
    return new DomainError('timeout', `${subject} did not answer before the deadline`);
  return new DomainError('unavailable', `message broker error on ${subject}`);
}
