import type { Msg, MsgHdrs, NatsConnection, PublishOptions } from '@nats-io/transport-node';
import { DomainError } from '../../contracts/errors.ts';
import { Headers } from '../../contracts/envelope.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { SignatureHeaders, type ContextSigner } from '../../platform/signing.ts';

/** One request as an actor would have received it. */
export interface SeenRequest {
  /** The wire subject (namespaced when a namespace is set). */
  subject: string;
  ctx: CallerContext;
  input: unknown;
  requestId: string;
  deadline: number;
  traceparent: string;
  /** What the actor's signer said of the signature. */
  verified: boolean;
}

/** What a fake actor does with a request: its answer's data, a DomainError thrown, or `'silence'` (never answers). */
export type FakeHandler = (input: never, request: SeenRequest) => unknown;

/**
 * The broker and the actors behind a Caller, in-process, for unit tests of what sends requests (the gateway's bridge):
 * `connection` is a NatsConnection good for request-reply only (RequestMux's inbox subscription and publish). A request
 * is answered as ActorHost answers (`{"ok":true,"data":…}` or `{"ok":false,"error":…}`), after its signature is checked
 * with `signer`; a subject without a handler gets the server's no-responders status. Nothing leaves the process.
 */
export class FakeBroker {
  readonly seen: SeenRequest[] = [];
  private readonly inboxes = new Map<string, (err: Error | null, msg: Msg) => void>();
  private readonly handlers: Record<string, FakeHandler>;
  private readonly signer: ContextSigner;

  constructor(signer: ContextSigner, handlers: Record<string, FakeHandler>) {
    this.signer = signer;
    this.handlers = handlers;
  }

  readonly connection = {
    options: {},
    subscribe: (subject: string, opts: { callback: (err: Error | null, msg: Msg) => void }) => {
      this.inboxes.set(subject.replace(/\.\*$/, ''), opts.callback);
      return { closed: new Promise<void>(() => undefined), unsubscribe: () => undefined };
    },
    publish: (subject: string, payload: Uint8Array, opts: PublishOptions = {}) => {
      // Asynchronous, as a reply over the network is.
      queueMicrotask(() => void this.answer(subject, payload, opts));
    },
  } as unknown as NatsConnection;

  private async answer(subject: string, payload: Uint8Array, opts: PublishOptions): Promise<void> {
    const h = opts.headers as MsgHdrs;
    const get = (name: string): string => h.get(name);
    const { ctx, input } = JSON.parse(Buffer.from(payload).toString('utf8')) as { ctx: CallerContext; input: unknown };
    const request: SeenRequest = {
      subject,
      ctx,
      input,
      requestId: get(Headers.requestId),
      deadline: Number(get(Headers.deadline)),
      traceparent: get(Headers.traceparent),
      verified: this.signer.verify(
        subject,
        get(Headers.requestId),
        get(Headers.deadline),
        get(SignatureHeaders.signedAt),
        get(SignatureHeaders.signature),
        payload,
      ).ok,
    };
    this.seen.push(request);
    const reply = opts.reply!;
    const handler = this.handlers[subject.replace(/^[^.]+\.(?=svc\.)/, '')];
    const deliver = (data: Uint8Array, code?: number): void => {
      const [inbox] = [...this.inboxes.keys()].filter((prefix) => reply.startsWith(`${prefix}.`));
      const msg = { subject: reply, data, headers: code ? { code } : undefined } as unknown as Msg;
      this.inboxes.get(inbox!)?.(null, msg);
    };
    if (!handler) return deliver(new Uint8Array(0), 503);
    let body: string;
    try {
      const data = await handler(input as never, request);
      if (data === 'silence') return;
      body = data === undefined ? '{"ok":true}' : `{"ok":true,"data":${JSON.stringify(data)}}`;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      body = JSON.stringify({ ok: false, error: err.toBody() });
    }
    deliver(Buffer.from(body, 'utf8'));
  }
}
