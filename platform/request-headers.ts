import { headers as natsHeaders, type Match, type MsgHdrs } from '@nats-io/transport-node';
import { Headers } from '../contracts/envelope.ts';
import { SignatureHeaders } from './signing.ts';

const encoder = new TextEncoder();
const LINE_BREAK = /[\r\n]/;

/** The five headers of a request as an actor reads them; '' for one that is absent (as MsgHdrs.get answers). */
export interface RequestHeaderValues {
  requestId: string;
  deadline: string;
  traceparent: string;
  signedAt: string;
  signature: string;
}

/**
 * The five headers of an arriving request in one pass over its decoded headers, each the first of its values under
 * its exact name, as `get` answers: `get` lists and filters every key on each call, six calls per request.
 */
export function readRequestHeaders(headers: MsgHdrs | undefined): RequestHeaderValues {
  const out: RequestHeaderValues = { requestId: '', deadline: '', traceparent: '', signedAt: '', signature: '' };
  if (!headers) return out;
  for (const [name, values] of headers) {
    const first = values[0] ?? '';
    if (name === Headers.requestId) out.requestId = first;
    else if (name === Headers.deadline) out.deadline = first;
    else if (name === Headers.traceparent) out.traceparent = first;
    else if (name === SignatureHeaders.signedAt) out.signedAt = first;
    else if (name === SignatureHeaders.signature) out.signature = first;
  }
  return out;
}

/**
 * The five headers of a signed request, encoded in one template: nats.js's own headers object validates, lists and
 * filters its keys on every `set` (five per request) and joins them again when it encodes, a visible share of a
 * call's CPU. Publishing reads only `encode()`; anything else asks a regular headers object made on first use, so this
 * is a complete MsgHdrs. The values are ours (ids, numbers, hex, base64url) except the request id, which is refused
 * with a line break and trimmed, as nats.js does.
 */
export class RequestHeaders implements MsgHdrs {
  private full: MsgHdrs | undefined;
  private readonly requestId: string;

  private readonly deadline: string;
  private readonly traceparent: string;
  private readonly signedAt: string;
  private readonly signature: string;
  constructor(requestId: string, deadline: string, traceparent: string, signedAt: string, signature: string) {
    this.deadline = deadline;
    this.traceparent = traceparent;
    this.signedAt = signedAt;
    this.signature = signature;
    if (LINE_BREAK.test(requestId)) throw new TypeError('header values cannot contain \\r or \\n');
    this.requestId = requestId.trim();
  }

  encode(): Uint8Array {
    if (this.full) return (this.full as MsgHdrs & { encode(): Uint8Array }).encode();
    return encoder.encode(
      `NATS/1.0\r\n${Headers.requestId}: ${this.requestId}\r\n${Headers.deadline}: ${this.deadline}\r\n${Headers.traceparent}: ${this.traceparent}\r\n` +
        `${SignatureHeaders.signedAt}: ${this.signedAt}\r\n${SignatureHeaders.signature}: ${this.signature}\r\n\r\n`,
    );
  }

  /** The same headers as nats.js's own object, from here on the one that answers. */
  private headers(): MsgHdrs {
    if (!this.full) {
      const h = natsHeaders();
      h.set(Headers.requestId, this.requestId);
      h.set(Headers.deadline, this.deadline);
      h.set(Headers.traceparent, this.traceparent);
      h.set(SignatureHeaders.signedAt, this.signedAt);
      h.set(SignatureHeaders.signature, this.signature);
      this.full = h;
    }
    return this.full;
  }

  get hasError(): boolean {
    return this.headers().hasError;
  }
  get status(): string {
    return this.headers().status;
  }
  get code(): number {
    return this.headers().code;
  }
  get description(): string {
    return this.headers().description;
  }
  get(k: string, match?: Match): string {
    return this.headers().get(k, match);
  }
  set(k: string, v: string, match?: Match): void {
    this.headers().set(k, v, match);
  }
  append(k: string, v: string, match?: Match): void {
    this.headers().append(k, v, match);
  }
  has(k: string, match?: Match): boolean {
    return this.headers().has(k, match);
  }
  keys(): string[] {
    return this.headers().keys();
  }
  values(k: string, match?: Match): string[] {
    return this.headers().values(k, match);
  }
  delete(k: string, match?: Match): void {
    this.headers().delete(k, match);
  }
  last(k: string, match?: Match): string {
    return this.headers().last(k, match);
  }
  [Symbol.iterator](): Iterator<[string, string[]]> {
    return this.headers()[Symbol.iterator]();
  }
}
