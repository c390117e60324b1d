import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { CallerContext } from '../contracts/context.ts';
import type { RequestEnvelope, ReplyEnvelope } from '../contracts/envelope.ts';
import { DomainError, describeZodError } from '../contracts/errors.ts';
import {
  domainOf,
  type Catalogue,
  type DomainSubjects,
  type ReplyIn,
  type ReplyOut,
  type RequestIn,
  type RequestOut,
  type SubjectName,
} from '../contracts/subject.ts';
import { IMPORT_REPLY_PREFIX } from './broker/agent-accounts.ts';
import { agentInboxPrefix } from './broker/permissions.ts';
import { Caller, type CallOptions } from './call.ts';
import { agentRepliesRefused } from './metrics.ts';
import { RequestDeadline, runWithDeadline } from './deadline.ts';
import type { Logger } from './logger.ts';
import { namespace, wireRequestSubject } from './namespace.ts';
import type { ContextSigner } from './signing.ts';
import { readRequestHeaders } from './request-headers.ts';
import { OutageLog } from './outage.ts';
import { JsonText } from './json-text.ts';
import { sqlStateOf, storeErrorToDomain } from './store-errors.ts';
import { continueTrace, formatTraceparent } from './trace.ts';

/** What a handler gets besides its parsed input. `call` propagates the request id, the deadline and the trace. */
export interface RequestScope<C extends Catalogue> {
  ctx: CallerContext;
  /** Child logger with request_id, subject and trace_id. */
  log: Logger;
  /** Aborted when the caller's deadline passes: long work should stop. */
  signal: AbortSignal;
  deadline: number;
  subject: string;
  /** This request's span (W3C traceparent): pass it on (e.g. in durable-publish headers) to keep one trace. */
  traceparent: string;
  call: <S extends SubjectName<C>>(subject: S, input: RequestIn<C, S>, opts?: CallOptions) => Promise<ReplyOut<C, S>>;
}

export type Handler<C extends Catalogue, S extends SubjectName<C>> = (
  input: RequestOut<C, S>,
  scope: RequestScope<C>,
) => Promise<ReplyIn<C, S>>;
export type Handlers<C extends Catalogue, D extends string> = Partial<{ [S in DomainSubjects<C, D>]: Handler<C, S> }>;

const decoder = new TextDecoder();

/** No request may hold an actor longer than this, whatever deadline its header claims (agents speak NATS directly). */
export const MAX_REQUEST_MS = 300_000;

const deadlinePassed = (): Error => new DomainError('timeout', 'deadline passed');

/**
 * Hosts actors in one process. Each actor is a NATS micro-service whose endpoints listen in the domain's queue
 * group, so `$SRV.PING|INFO|STATS` answer and instances of the same domain share the load.
 */
export class ActorHost<C extends Catalogue> {
  private readonly services: Service[] = [];
  private readonly inflight = new Set<Promise<void>>();
  private draining: Promise<void> | undefined;
  private readonly outages = new OutageLog();
  readonly caller: Caller<C>;

  private readonly nc: NatsConnection;
  private readonly catalogue: C;
  private readonly signer: ContextSigner;
  private readonly log: Logger;
  private readonly defaultTimeoutMs: number;
  private readonly validateReplies: boolean;
  constructor(
    nc: NatsConnection,
    catalogue: C,
    signer: ContextSigner,
    log: Logger,
    defaultTimeoutMs = 10_000,
    /** Check replies against their schemas (SVC_VALIDATE_REPLIES): tests and development. */
    validateReplies = true,
  ) {
    this.nc = nc;
    this.catalogue = catalogue;
    this.signer = signer;
    this.log = log;
    this.defaultTimeoutMs = defaultTimeoutMs;
    this.validateReplies = validateReplies;
    this.caller = new Caller(() => (nc.isClosed() ? undefined : nc), catalogue, signer, defaultTimeoutMs);
  }

  /** Serves `handlers` as the actor `name` of `domain`; every subject must belong to that domain. */
  async serve<D extends string>(domain: D, name: string, handlers: Handlers<C, D>, version = '1.0.0'): Promise<void> {
    if (this.draining) throw new Error(`cannot serve ${name}: the actor host is draining`);
    const entries = Object.entries(handlers) as [SubjectName<C>, Handler<C, SubjectName<C>>][];
    // Checked before anything is subscribed, so a wrong table fails start-up without leaving a half-served actor.
    for (const [subject] of entries) {
      if (domainOf(subject) !== domain) throw new Error(`${subject} does not belong to domain ${domain}`);
      if (!Object.hasOwn(this.catalogue, subject)) throw new Error(`${subject} is not in the catalogue`);
    }
    const svc = await new Svcm(this.nc).add({ name, version, queue: domain, description: `${domain} actor ${name}` });
    this.services.push(svc);
    for (const [subject, handler] of entries) {
      const spec = this.catalogue[subject]!;
      // A caller of this process signing for this subject may be answered here: its signer keeps what it signs for it.
      this.signer.servesHere(wireRequestSubject(subject));
      svc.addEndpoint(subject.replaceAll('.', '_'), {
        subject: wireRequestSubject(subject),
        queue: domain,
        metadata: { summary: spec.summary },
        handler: (err, msg) => {
          if (err) {
            this.log.error({ err, subject }, 'endpoint failed');
            return;
          }
          // Messages still arriving while a drain unsubscribes were already routed here: they are handled, not refused.
          const p = this.handle(subject, handler, msg)
            .catch((e: unknown) => this.log.error({ err: e, subject }, 'request handling failed'))
            .finally(() => this.inflight.delete(p));
          this.inflight.add(p);
        },
      });
    }
    // Resolve only once the broker has the subscriptions: a process that reports itself ready before then can see its
    // first requests (sent by another connection) answered "no responders".
    await this.nc.flush();
    this.log.info({ domain, actor: name, subjects: entries.length }, 'actor serving');
  }

  /**
   * Serves an agent-facing subject family `<prefix>.<agentId>` (e.g. `svc.system.agent.config.{agentID}`, fixed by the
   * spec, so never namespaced). Agents cannot sign a caller context: the broker is what authenticates them (an agent
   * may publish only on its own subjects), so the agent is the subject's last token and the body never names it.
   * Requests are plain JSON parsed with `request`; replies are `{ok: true, data}` or `{ok: false, error: {code, message}}`.
   */
  async serveAgents<Req, Res>(opts: {
    domain: string;
    name: string;
    prefix: string;
    request: z.ZodType<Req>;
    /** Resolves `undefined` to send no reply at all (an agent of another system sharing this broker). */
    handler: (agentId: string, input: Req, scope: { log: Logger; signal: AbortSignal }) => Promise<Res | undefined>;
  }): Promise<void> {
    if (this.draining) throw new Error(`cannot serve ${opts.name}: the actor host is draining`);
    // The subject is never namespaced, so systems sharing a broker each need their own queue group to see every request
    // (and stay silent for agents they do not know: see `handler`).
    const queue = namespace() ? `${opts.domain}-${namespace()}` : opts.domain;
    const svc = await new Svcm(this.nc).add({
      name: opts.name,
      version: '1.0.0',
      queue,
      description: `${opts.domain} agent endpoint ${opts.name}`,
    });
    this.services.push(svc);
    const depth = opts.prefix.split('.').length;
    svc.addEndpoint(opts.name.replaceAll('-', '_'), {
      subject: `${opts.prefix}.*`,
      queue,
      metadata: { summary: `agent requests on ${opts.prefix}.{agentID}` },
      handler: (err, msg) => {
        if (err) {
          this.log.error({ err, endpoint: opts.name }, 'endpoint failed');
          return;
        }
        const p = this.handleAgent(msg, depth, opts)
          .catch((e: unknown) => this.log.error({ err: e, endpoint: opts.name }, 'agent request handling failed'))
          .finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      },
    });
    await this.nc.flush(); // as in serve: the broker has the subscription before this resolves
    this.log.info({ domain: opts.domain, actor: opts.name, subject: `${opts.prefix}.*` }, 'agent endpoint serving');
  }

  private async handleAgent<Req, Res>(
    msg: ServiceMsg,
    depth: number,
    opts: {
      request: z.ZodType<Req>;
      handler: (agentId: string, input: Req, scope: { log: Logger; signal: AbortSignal }) => Promise<Res | undefined>;
    },
  ): Promise<void> {
    const agentId = msg.subject.split('.')[depth] ?? '';
    const log = this.log.child({ agent_id: agentId, subject: msg.subject });
    const limit = new RequestDeadline(Date.now() + this.defaultTimeoutMs, deadlinePassed);
    let reply: { ok: true; data: Res } | { ok: false; error: { code: string; message: string } };
    try {
      let body: unknown;
      try {
        body = msg.data.length === 0 ? {} : JSON.parse(decoder.decode(msg.data));
      } catch {
        throw new DomainError('bad_request', 'message is not JSON');
      }
      const parsed = opts.request.safeParse(body);
      if (!parsed.success) throw new DomainError('bad_request', describeZodError(parsed.error));
      const data = await runWithDeadline(limit, () =>
        opts.handler(agentId, parsed.data, {
          log,
          get signal() {
            return limit.signal;
          },
        }),
      );
      if (data === undefined) return;
      reply = { ok: true, data };
    } catch (err) {
      const e = toReplyError(err);
      if (!(err instanceof DomainError)) log.error({ err }, 'agent request failed');
      reply = { ok: false, error: { code: e.code, message: e.message } };
    } finally {
      limit.end();
    }
    // Only to the agent itself: through its account's import (the server's `_R_.` subject) or, for an agent enrolled
    // before agent accounts, its own inbox prefix. Any other reply subject would make this service publish where the
    // agent may not.
    const to = msg.reply ?? '';
    if (!to) return;
    if (!to.startsWith(IMPORT_REPLY_PREFIX) && !to.startsWith(`${agentInboxPrefix(agentId)}.`)) {
      agentRepliesRefused.inc();
      log.warn(
        { reply_subject: to.slice(0, 128) },
        'agent request with a reply subject outside its own inbox: not answered',
      );
      return;
    }
    try {
      msg.respond(Buffer.from(JSON.stringify(reply), 'utf8'));
    } catch (err) {
      log.warn({ err }, 'could not send the reply');
    }
  }

  private async handle(subject: SubjectName<C>, handler: Handler<C, SubjectName<C>>, msg: ServiceMsg): Promise<void> {
    const spec = this.catalogue[subject]!;
    const now = Date.now();
    const h = readRequestHeaders(msg.headers);
    const deadlineHeader = h.deadline;
    const claimed = Number(deadlineHeader);
    const deadline =
      Number.isFinite(claimed) && claimed > 0 ? Math.min(claimed, now + MAX_REQUEST_MS) : now + this.defaultTimeoutMs;
    const requestId = h.requestId || randomUUID();
    const trace = continueTrace(h.traceparent);
    const traceparent = formatTraceparent(trace);
    // Created on first use: most requests log nothing, and a child logger serializes its bindings when made.
    let child: Logger | undefined;
    const log = (): Logger => (child ??= this.log.child({ request_id: requestId, subject, trace_id: trace.traceId }));
    const started = performance.now();
    let reply: ReplyEnvelope;
    const remaining = deadline - now;
    if (remaining <= 0) {
      // The caller has given up already: an answer would go nowhere. (Clocks of caller and actor must agree: NTP.)
      log().warn({ late_ms: -remaining }, 'request arrived after its deadline; dropped');
      return;
    }
    const limit = new RequestDeadline(deadline, deadlinePassed);
    try {
      // Before anything is parsed: only a context a service vouched for is believed (a NATS connection is not a caller).
      const verdict = this.signer.verify(msg.subject, h.requestId, deadlineHeader, h.signedAt, h.signature, msg.data);
      if (!verdict.ok) {
        log().warn({ reason: verdict.reason }, 'request refused: caller context not signed by a service');
        throw new DomainError('unauthorized', 'request is not signed by a service');
      }
      let body: unknown;
      try {
        body = JSON.parse(decoder.decode(msg.data));
      } catch {
        throw new DomainError('bad_request', 'message is not JSON');
      }
      // The signature vouches for the context: a service built it from what it authenticated (typed by
      // contracts/context.ts), so it is not parsed again here, only the input, against the subject's schema.
      if (!isEnvelope(body)) throw new DomainError('bad_request', 'message is not a request envelope {ctx, input}');
      const parsed = spec.request.safeParse(body.input);
      if (!parsed.success) throw new DomainError('bad_request', describeZodError(parsed.error));
      const ctx = body.ctx;
      const scope: RequestScope<C> = {
        ctx,
        get log() {
          return log();
        },
        get signal() {
          return limit.signal;
        },
        deadline,
        subject,
        traceparent,
        // A nested call may ask for less time than is left, never for more.
        call: (s, input, opts = {}) =>
          this.caller.call(s, input, ctx, {
            traceparent,
            ...opts,
            deadline: Math.min(
              deadline,
              opts.deadline ?? deadline,
              opts.timeoutMs !== undefined ? Date.now() + opts.timeoutMs : deadline,
            ),
          }),
      };
      // The deadline also reaches code without the scope (the PostgreSQL pool and transactions).
      const out = await runWithDeadline(limit, () => handler(parsed.data as RequestOut<C, SubjectName<C>>, scope));
      if (this.validateReplies) {
        const value: unknown = out instanceof JsonText ? parseJsonText(out) : out;
        const checked = spec.reply.safeParse(value);
        if (!checked.success) {
          log().error({ issues: checked.error.issues }, 'handler reply does not match its schema');
          throw new DomainError('internal_error', 'internal error');
        }
        // Production sends the handler's value unchecked, so the check must be a pure check: a reply it would have
        // trimmed (extra keys) or converted (defaults, transforms) is a bug here, where tests run.
        if (!sameOnTheWire(value, checked.data)) {
          log().error(
            { subject },
            'handler reply differs from what its schema yields (extra keys, defaults or transforms)',
          );
          throw new DomainError('internal_error', 'internal error');
        }
      }
      reply = { ok: true, data: out };
      this.outages.succeeded(log, subject);
    } catch (err) {
      const domainError = toReplyError(err);
      if (!(err instanceof DomainError)) this.logFailure(log(), subject, err, domainError);
      reply = errorEnvelope(domainError);
    } finally {
      limit.end();
    }
    if (Date.now() > deadline) {
      log().warn({ ms: Math.round(performance.now() - started) }, 'finished after the deadline');
    }
    let payload: Uint8Array;
    try {
      // Buffer.from rather than TextEncoder: faster for replies of a few KB (Node's pool for the small ones).
      payload =
        reply.ok && reply.data instanceof JsonText
          ? reply.data.encode('{"ok":true,"data":', '}')
          : Buffer.from(JSON.stringify(reply), 'utf8');
    } catch (err) {
      // A reply zod accepted but JSON cannot carry (a bigint, a cycle): a bug, answered as one.
      log().error({ err }, 'reply is not serializable');
      reply = errorEnvelope(new DomainError('internal_error', 'internal error'));
      payload = Buffer.from(JSON.stringify(reply), 'utf8');
    }
    try {
      if (!reply.ok && reply.error.code === 'internal_error') msg.respondError(500, reply.error.message, payload);
      else msg.respond(payload);
    } catch (err) {
      // The connection closed under us: the caller times out, nothing else to do here.
      log().warn({ err }, 'could not send the reply');
      return;
    }
    if (this.log.isLevelEnabled('debug'))
      log().debug({ ms: Math.round(performance.now() - started), ok: reply.ok }, 'handled');
  }

  /**
   * A store that is down is an outage, logged once per transition (OutageLog); a store refusing the request (a
   * constraint race, invalid input, the deadline) is the request's fate, logged at info; anything else is a fault.
   */
  private logFailure(log: Logger, subject: string, err: unknown, answered: DomainError): void {
    if (answered.code === 'unavailable') this.outages.failed(log, subject, err);
    else if (answered.code !== 'internal_error')
      log.info(
        { code: answered.code, sqlstate: sqlStateOf(err), reason: answered.message },
        'store refused the request',
      );
    else log.error({ err, code: answered.code }, 'handler failed');
  }

  /**
   * Stops taking work (each endpoint's subscription is drained, so queue-group peers get new requests and what was
   * already routed here is still handled), lets in-flight requests finish (bounded by `graceMs`), and resolves.
   * Idempotent. The connection itself is the caller's to close afterwards.
   */
  drain(graceMs = 15_000): Promise<void> {
    this.draining ??= (async () => {
      await Promise.all(
        this.services.map((s) => s.stop().catch((err: unknown) => this.log.warn({ err }, 'service stop failed'))),
      );
      const all = Promise.allSettled([...this.inflight]);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        all.then(() => false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
      ]);
      clearTimeout(timer);
      if (timedOut)
        this.log.warn(
          { inflight: this.inflight.size, grace_ms: graceMs },
          'drain grace period over; requests still in flight are abandoned',
        );
    })();
    return this.draining;
  }
}

function parseJsonText(out: JsonText): unknown {
  try {
    return out.parse();
  } catch {
    throw new Error('handler reply held as JSON text is not JSON');
  }
}

/** Equal once serialized as JSON, key order aside. */
const sameOnTheWire = (a: unknown, b: unknown): boolean =>
  isDeepStrictEqual(JSON.parse(JSON.stringify(a) ?? 'null'), JSON.parse(JSON.stringify(b) ?? 'null'));

const isEnvelope = (body: unknown): body is RequestEnvelope =>
  typeof body === 'object' &&
  body !== null &&
  'input' in body &&
  typeof (body as { ctx?: unknown }).ctx === 'object' &&
  (body as { ctx?: unknown }).ctx !== null;

function errorEnvelope(err: DomainError): ReplyEnvelope {
  return { ok: false, error: err.toBody() };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);
// PostgreSQL SQLSTATEs of an unreachable or refusing server: class 08 (connection exception), 57P01-03 (shutdown,
// crash, starting up), 53300 (too many connections).
const PG_UNAVAILABLE = /^(08\w{3}|57P0[123]|53300)$/;
const UNAVAILABLE_MESSAGES =
  /Connection is closed|Command timed out|Stream isn't writeable|timeout exceeded when trying to connect|Connection terminated/i;

/** nats.js's errors for a broker that cannot be reached or did not answer (not a refusal: those are JetStream's). */
const NATS_UNAVAILABLE = new Set([
  'TimeoutError',
  'ConnectionError',
  'ClosedConnectionError',
  'DrainingConnectionError',
  'NoResponders',
]);

/** True when `err` (or one of its causes) says a backing store or peer cannot be reached right now. */
export function isUnavailableError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as Error & { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || PG_UNAVAILABLE.test(code))) return true;
    if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ConnectionException') return true;
    // The broker lost or silent (a JetStream publish's ack not back in time during a failover): try again.
    if (NATS_UNAVAILABLE.has(e.name)) return true;
    if (UNAVAILABLE_MESSAGES.test(e.message)) return true;
    if (e.name === 'TsdbError' && (e as Error & { status?: unknown }).status === 0) return true;
  }
  return false;
}

/**
 * What the caller is told about a thrown error: a DomainError as it is; a PostgreSQL refusal as what it means
 * (store-errors.ts: invalid input 400, missing reference 404, duplicate 409, ...); a store or peer that cannot be reached as
 * `unavailable` (503: try again); anything else as `internal_error`. Neither carries the original message or stack.
 */
export function toReplyError(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
  // PostgreSQL refusing the input or losing a race (classes 22, 23, 40; 57014) is not an outage.
  const refused = storeErrorToDomain(err);
  if (refused) return refused;
  if (isUnavailableError(err)) return new DomainError('unavailable', 'a backing service is temporarily unavailable');
  return new DomainError('internal_error', 'internal error');
}
