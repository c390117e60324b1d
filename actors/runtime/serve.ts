import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import type { CallerContext } from '../../contracts/context.ts';
import { Headers, RequestEnvelope, type ReplyEnvelope } from '../../contracts/envelope.ts';
import { DomainError, describeZodError } from '../../contracts/errors.ts';
import { domainOf, type Catalogue, type DomainSubjects, type ReplyIn, type ReplyOut, type RequestIn, type RequestOut, type SubjectName } from '../../contracts/subject.ts';
import { Caller, type CallOptions } from './call.ts';
import type { Logger } from './logger.ts';
import { wireRequestSubject } from './namespace.ts';

/** What a handler gets besides its parsed input. `call` propagates the request id and the deadline. */
export interface RequestScope<C extends Catalogue> {
  ctx: CallerContext;
  log: Logger;
  /** Aborted when the caller's deadline passes: long work should stop. */
  signal: AbortSignal;
  deadline: number;
  subject: string;
  call: <S extends SubjectName<C>>(subject: S, input: RequestIn<C, S>, opts?: CallOptions) => Promise<ReplyOut<C, S>>;
}

export type Handler<C extends Catalogue, S extends SubjectName<C>> = (input: RequestOut<C, S>, scope: RequestScope<C>) => Promise<ReplyIn<C, S>>;
export type Handlers<C extends Catalogue, D extends string> = Partial<{ [S in DomainSubjects<C, D>]: Handler<C, S> }>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Hosts actors in one process. Each actor is a NATS micro-service whose endpoints listen in the domain's queue
 * group, so `$SRV.PING|INFO|STATS` answer and instances of the same domain share the load.
 */
export class ActorHost<C extends Catalogue> {
  private readonly services: Service[] = [];
  private readonly inflight = new Set<Promise<void>>();
  private stopping = false;
  readonly caller: Caller<C>;

  constructor(
    private readonly nc: NatsConnection,
    private readonly catalogue: C,
    private readonly log: Logger,
    defaultTimeoutMs = 10_000,
  ) {
    this.caller = new Caller(() => (nc.isClosed() ? undefined : nc), catalogue, defaultTimeoutMs);
  }

  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Serves `handlers` as the actor `name` of `domain`; every subject must belong to that domain. */
  async serve<D extends string>(domain: D, name: string, handlers: Handlers<C, D>, version = '1.0.0'): Promise<void> {
    const svc = await new Svcm(this.nc).add({ name, version, queue: domain, description: `${domain} actor ${name}` });
    this.services.push(svc);
    for (const [subject, handler] of Object.entries(handlers) as [SubjectName<C>, Handler<C, SubjectName<C>>][]) {
      if (domainOf(subject) !== domain) throw new Error(`${subject} does not belong to domain ${domain}`);
      const spec = this.catalogue[subject];
      if (!spec) throw new Error(`${subject} is not in the catalogue`);
      svc.addEndpoint(subject.replaceAll('.', '_'), {
        subject: wireRequestSubject(subject),
        queue: domain,
        metadata: { summary: spec.summary },
        handler: (err, msg) => {
          if (err) {
            this.log.error({ err, subject }, 'endpoint failed');
            return;
          }
          if (this.stopping) {
            // Not ours to take any more: say so quickly instead of letting the caller time out.
            msg.respond(encoder.encode(JSON.stringify(errorEnvelope(new DomainError('unavailable', 'actor is shutting down')))));
            return;
          }
          const p = this.handle(subject, handler, msg).finally(() => this.inflight.delete(p));
          this.inflight.add(p);
        },
      });
    }
    this.log.info({ domain, actor: name, subjects: Object.keys(handlers).length }, 'actor serving');
  }

  private async handle(subject: SubjectName<C>, handler: Handler<C, SubjectName<C>>, msg: ServiceMsg): Promise<void> {
    const spec = this.catalogue[subject]!;
    const deadline = Number(msg.headers?.get(Headers.deadline)) || Date.now() + 10_000;
    const requestId = msg.headers?.get(Headers.requestId) || randomUUID();
    const log = this.log.child({ request_id: requestId, subject });
    const started = performance.now();
    let reply: ReplyEnvelope;
    const ac = new AbortController();
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      log.warn('request arrived after its deadline; dropped');
      return;
    }
    const timer = setTimeout(() => ac.abort(new DomainError('timeout', 'deadline passed')), remaining);
    try {
      let body: unknown;
      try {
        body = JSON.parse(decoder.decode(msg.data));
      } catch {
        throw new DomainError('bad_request', 'message is not JSON');
      }
      const envelope = RequestEnvelope.safeParse(body);
      if (!envelope.success) throw new DomainError('bad_request', describeZodError(envelope.error));
      const parsed = spec.request.safeParse(envelope.data.input);
      if (!parsed.success) throw new DomainError('bad_request', describeZodError(parsed.error));
      const ctx = envelope.data.ctx;
      const scope: RequestScope<C> = {
        ctx,
        log,
        signal: ac.signal,
        deadline,
        subject,
        call: (s, input, opts) => this.caller.call(s, input, ctx, { deadline, traceparent: msg.headers?.get(Headers.traceparent), ...opts }),
      };
      const out = await handler(parsed.data as RequestOut<C, SubjectName<C>>, scope);
      const checked = spec.reply.safeParse(out);
      if (!checked.success) {
        log.error({ issues: checked.error.issues }, 'handler reply does not match its schema');
        throw new DomainError('internal_error', 'internal error');
      }
      reply = { ok: true, data: checked.data };
    } catch (err) {
      if (err instanceof DomainError) {
        reply = errorEnvelope(err);
      } else {
        log.error({ err }, 'handler failed');
        reply = errorEnvelope(new DomainError('internal_error', 'internal error'));
      }
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() > deadline) {
      log.warn({ ms: Math.round(performance.now() - started) }, 'finished after the deadline');
    }
    if (!reply.ok && reply.error.code === 'internal_error') msg.respondError(500, reply.error.message, encoder.encode(JSON.stringify(reply)));
    else msg.respond(encoder.encode(JSON.stringify(reply)));
    log.debug({ ms: Math.round(performance.now() - started), ok: reply.ok }, 'handled');
  }

  /** Stop taking work, let in-flight requests finish (bounded), then stop the services. */
  async drain(graceMs = 15_000): Promise<void> {
    this.stopping = true;
    // Unsubscribing first means queue-group peers get the new messages.
    await Promise.all(this.services.map((s) => s.stop().catch(() => undefined)));
    const all = Promise.allSettled([...this.inflight]);
    await Promise.race([all, new Promise((r) => setTimeout(r, graceMs))]);
  }
}

function errorEnvelope(err: DomainError): ReplyEnvelope {
  return { ok: false, error: err.toBody() };
}
