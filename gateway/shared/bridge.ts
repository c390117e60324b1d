import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Caller } from '../../platform/call.ts';
import { MemoryKv, type KvStore } from '../../platform/stores/kv.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import { anonymousContext, type CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { Catalogue, RequestIn, ReplyOut, SubjectName } from '../../contracts/subject.ts';
import type { GatewayApp } from './gateway-app.ts';
import type { BrokerBreaker } from './broker-breaker.ts';
import { clientInfo, type AuthMode, type Authenticator } from './auth.ts';
import { apiError, statusOf, toApiError } from './errors.ts';
import {
  callerScope,
  fingerprint,
  idempotencyKeyOf,
  IdempotencyStore,
  isFinalError,
  REPLAYED_HEADER,
  type StoredAnswer,
} from './idempotency.ts';
import { errorResponses, operationIdOf } from './openapi.ts';
import { deadlineOf, setDeadline, traceparentOf } from './request-context.ts';

/** What every route of a gateway needs to reach the actors. */
export interface GatewayDeps<C extends Catalogue = SystemCatalogue> {
  caller: Caller<C>;
  auth: Authenticator;
  requestTimeoutMs: number;
  /** Optional per-route guard run before authentication (rate limits). */
  guard?: (req: FastifyRequest, kind: RateClass) => Promise<void>;
  /** Where answers to `Idempotency-Key` requests are kept (Valkey). Unset: in-process, correct for one instance only. */
  idempotency?: KvStore;
  /** Shared by a process's gateways: new requests are refused at once while the broker is not answering. */
  breaker?: BrokerBreaker;
}

/** Which rate-limit bucket a route counts against. */
export type RateClass = 'auth' | 'api' | 'none';

type Schema = z.ZodType;
type Out<T> = T extends Schema ? z.output<T> : undefined;

export interface BridgeRoute<
  C extends Catalogue,
  S extends SubjectName<C>,
  P extends Schema | undefined,
  Q extends Schema | undefined,
  B extends Schema | undefined,
> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  subject: S;
  auth: AuthMode;
  rate?: RateClass;
  tags?: string[];
  summary?: string;
  /** The operation's id in the OpenAPI document; default from the subject (`svc.fleet.clients.list` → `fleet_clients_list`). */
  operationId?: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Builds the subject's input from the validated request. */
  input: (r: {
    params: Out<P>;
    query: Out<Q>;
    body: Out<B>;
    ctx: CallerContext;
    req: FastifyRequest;
  }) => RequestIn<C, S>;
  /** Success status (default 200); 204 sends no body. */
  status?: number;
  /**
   * The subject answers a page (`{ items, total, page, per_page }`): the route replies with the list envelope
   * `{ data, meta: { total, page, per_page } }` and documents it.
   */
  paged?: ReplyOut<C, S> extends Page ? true : never;
  /** Custom reply (HTML, PDF, redirects). Default: `{ data }`. */
  send?: (data: ReplyOut<C, S>, reply: FastifyReply, req: FastifyRequest) => unknown;
  /** The documented success body of a custom `send`, when it is JSON of a known shape (default: undocumented). */
  answer?: Schema;
  /**
   * Takes an `Idempotency-Key` header (see idempotency.ts). Default: on for an authenticated POST answering 201 (a
   * create); off elsewhere, where the header is ignored. Turn it off for a create whose answer is a secret shown once,
   * so no copy of it is kept in the store.
   */
  idempotent?: boolean;
}

/** What a paginated subject answers. */
export interface Page {
  items: unknown[];
  total: number;
  page: number;
  per_page: number;
}

const Meta = z.object({ total: z.number().int(), page: z.number().int(), per_page: z.number().int() });

/** A reply schema of exactly `{ items, total, page, per_page }` (the contracts' Paged). */
function isPlainPage(reply: z.ZodType): boolean {
  return reply instanceof z.ZodObject && Object.keys(reply.shape).sort().join() === 'items,page,per_page,total';
}

/** The documented success of a route that shapes its own answer (see its summary). */
const CustomAnswer = z.unknown().describe('The answer this route shapes itself (see the summary).');

/** The documented success body of a route: `{ data }`, the list envelope, or nothing for 204. */
function responseSchema(reply: z.ZodType, paged: boolean, status: number): z.ZodType {
  if (status === 204) return z.null().describe('No content');
  if (paged && reply instanceof z.ZodObject && reply.shape.items)
    return z.object({ data: reply.shape.items as z.ZodType, meta: Meta });
  return z.object({ data: reply });
}

/** The OpenAPI security requirement of an auth mode: none for public routes (said, so tools need not guess). */
export const securityOf = (auth: AuthMode): Record<string, string[]>[] =>
  auth === 'public' ? [] : auth === 'authenticated' ? [{ bearer: [] }, { apiKey: [] }] : [{ bearer: [] }];

/** Registers a REST route that authenticates, validates, and turns the request into a call on its subject. */
export function bridge<
  C extends Catalogue,
  S extends SubjectName<C>,
  P extends Schema | undefined = undefined,
  Q extends Schema | undefined = undefined,
  B extends Schema | undefined = undefined,
>(app: GatewayApp, deps: GatewayDeps<C>, route: BridgeRoute<C, S, P, Q, B>): void {
  const spec = deps.caller.catalogue[route.subject]!;
  const rate = route.rate ?? (route.auth === 'public' ? 'auth' : 'api');
  const idempotent =
    route.idempotent ?? (route.method === 'POST' && route.status === 201 && route.auth !== 'public' && !route.send);
  // Answers are kept per caller: an anonymous caller has no scope, and a custom reply is not a storable body.
  if (idempotent && (route.auth === 'public' || route.send))
    throw new Error(`${route.method} ${route.url}: idempotent needs an authenticated route with the default reply`);
  const status = route.status ?? 200;
  // Routes whose answer is the actor's data as it is (`{ data }`), or its page as the list envelope: forwarded
  // without being parsed and serialized again. A page schema with keys beyond the four is rendered the usual way.
  const forwarded = !route.send && !route.paged && status !== 204;
  const forwardedPage = !route.send && route.paged === true && status !== 204 && isPlainPage(spec.reply);
  /** The default answer to a reply: `{ data }`, the list envelope, or nothing for 204. */
  const render = (data: ReplyOut<C, S>): { status: number; body: unknown } => {
    if (status === 204) return { status, body: undefined };
    if (route.paged) {
      const page = data as Page;
      return {
        status,
        body: { data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } },
      };
    }
    return { status, body: { data } };
  };
  app.route({
    method: route.method,
    url: route.url,
    schema: {
      ...(route.params ? { params: route.params } : {}),
      ...(route.query ? { querystring: route.query } : {}),
      ...(route.body ? { body: route.body } : {}),
      summary: route.summary ?? spec.summary,
      operationId: route.operationId ?? operationIdOf(route.subject),
      response: {
        [status]: route.send
          ? (route.answer ?? CustomAnswer)
          : responseSchema(spec.reply, route.paged === true, status),
        ...errorResponses({
          errors: spec.errors,
          auth: route.auth,
          limited: rate !== 'none',
          hasBody: route.method !== 'GET',
          idempotent,
        }),
      },
      ...(route.tags ? { tags: route.tags } : {}),
      security: securityOf(route.auth),
    },
    // Rate limits run before body validation so an anonymous flood costs little. The request's deadline starts
    // here: the limiter, authentication (which may ask the access resolver) and the call all fit inside it.
    onRequest: async (req) => {
      setDeadline(req, Date.now() + deps.requestTimeoutMs);
      if (deps.guard && rate !== 'none') await deps.guard(req, rate);
    },
    handler: async (req, reply) => {
      const ctx =
        route.auth === 'public'
          ? anonymousContext(req.id, clientInfo(req))
          : await deps.auth.authenticate(req, route.auth);
      const key = idempotent ? idempotencyKeyOf(req) : undefined;
      const input = route.input({
        params: req.params as Out<P>,
        query: req.query as Out<Q>,
        body: req.body as Out<B>,
        ctx,
        req,
      });
      const deadline = deadlineOf(req, deps.requestTimeoutMs);
      const scope = callerScope(ctx);
      if (key !== undefined && scope !== undefined) {
        const { answer, replayed } = await idempotentCall(req, deps, { scope, key, deadline }, (callDeadline) =>
          deps.caller
            .call(route.subject, input, ctx, { deadline: callDeadline, traceparent: traceparentOf(req) })
            .then(render),
        );
        if (replayed) void reply.header(REPLAYED_HEADER, 'true');
        // A stored error is sent again as an error, so its body carries this request's id like every other.
        if ('error' in answer) throw apiError(answer.error.code, answer.error.message);
        return reply.status(answer.status).send(answer.body);
      }
      if (forwarded || forwardedPage) {
        // The actor's answer goes out as the bytes it sent: `{ data }` or the list envelope, unparsed (Caller.callForwarded*).
        const opts = { deadline, traceparent: traceparentOf(req) };
        const body = forwardedPage
          ? await deps.caller.callForwardedPage(route.subject, input, ctx, opts)
          : await deps.caller.callForwarded(route.subject, input, ctx, opts);
        return reply
          .status(status)
          .type('application/json; charset=utf-8')
          .send(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
      }
      const data = await deps.caller.call(route.subject, input, ctx, { deadline, traceparent: traceparentOf(req) });
      if (route.send) return route.send(data, reply, req);
      const answer = render(data);
      return reply.status(answer.status).send(answer.body);
    },
  });
}

const stores = new WeakMap<GatewayDeps<Catalogue>, IdempotencyStore>();
function storeOf<C extends Catalogue>(deps: GatewayDeps<C>): IdempotencyStore {
  let store = stores.get(deps as GatewayDeps<Catalogue>);
  if (!store) {
    store = new IdempotencyStore(deps.idempotency ?? new MemoryKv());
    stores.set(deps as GatewayDeps<Catalogue>, store);
  }
  return store;
}

/**
 * Runs a keyed request once: claims the key (or answers what is stored, 409 while running, 422 for another request),
 * calls, and keeps the complete answer before sending it. The call may outlive the request's deadline: the client
 * gets its 504 on time, while the call goes on (up to one more request timeout) and its outcome is stored, so the
 * retry the 504 invites gets the real answer instead of creating twice or a 409.
 */
async function idempotentCall<C extends Catalogue>(
  req: FastifyRequest,
  deps: GatewayDeps<C>,
  k: { scope: string; key: string; deadline: number },
  call: (deadline: number) => Promise<{ status: number; body: unknown }>,
): Promise<{ answer: StoredAnswer; replayed: boolean }> {
  const store = storeOf(deps);
  const fp = fingerprint(req);
  // A keyed call may run one more request timeout past its HTTP answer (a 504), so its real outcome is kept.
  const callDeadline = k.deadline + deps.requestTimeoutMs;
  // The running marker outlives the call (and the store write after it), and expires if this gateway dies meanwhile.
  const claim = await store.claim(k.scope, k.key, fp, callDeadline - Date.now() + 5_000);
  if (claim.kind === 'replay') return { answer: claim.answer, replayed: true };

  // A store failing after the call ran is logged, not answered: the call's own answer is what the client needs. The
  // running marker then expires on its own, and a repeat after that runs again.
  const keep = async (op: () => Promise<void>): Promise<void> => {
    try {
      await op();
    } catch (err) {
      req.log.warn({ err, request_id: req.id }, 'idempotency store unavailable; answer not kept');
    }
  };
  const finished = call(callDeadline).then(
    async (answer): Promise<StoredAnswer> => {
      await keep(() => store.save(k.scope, k.key, fp, answer));
      return answer;
    },
    async (err: unknown): Promise<never> => {
      const apiErr = toApiError(err);
      if (isFinalError(apiErr))
        await keep(() =>
          store.save(k.scope, k.key, fp, {
            status: statusOf[apiErr.code],
            error: { code: apiErr.code, message: apiErr.message },
          }),
        );
      else await keep(() => store.release(k.scope, k.key));
      throw err;
    },
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>(
    (resolve) => (timer = setTimeout(() => resolve('late'), Math.max(0, k.deadline - Date.now()))),
  );
  try {
    // After 'late' the call settles in the background (race already handles its rejection); its outcome is kept there.
    const first = await Promise.race([finished, late]);
    if (first === 'late')
      throw new DomainError(
        'timeout',
        'the request did not finish before the deadline; repeat it with the same Idempotency-Key for its outcome',
      );
    return { answer: first, replayed: false };
  } finally {
    clearTimeout(timer);
  }
}

/** A route of a group: as for `bridge`, with the group's auth mode and tags unless the route names its own. */
export type GroupRoute<
  C extends Catalogue,
  S extends SubjectName<C>,
  P extends Schema | undefined,
  Q extends Schema | undefined,
  B extends Schema | undefined,
> = Omit<BridgeRoute<C, S, P, Q, B>, 'auth'> & { auth?: AuthMode };

/**
 * The routes of one resource file share how they are entered and their OpenAPI tags:
 * `const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['users'] }); route({ method, url, subject, ... })`.
 */
export function routeGroup<C extends Catalogue>(
  app: GatewayApp,
  deps: GatewayDeps<C>,
  defaults: { auth: AuthMode; tags: string[] },
) {
  return <
    S extends SubjectName<C>,
    P extends Schema | undefined = undefined,
    Q extends Schema | undefined = undefined,
    B extends Schema | undefined = undefined,
  >(
    route: GroupRoute<C, S, P, Q, B>,
  ): void =>
    bridge<C, S, P, Q, B>(app, deps, {
      ...route,
      auth: route.auth ?? defaults.auth,
      tags: route.tags ?? defaults.tags,
    });
}

/** Pagination query of both services: page ≥ 1 (default 1), per_page 1..100 (default 20). */
export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
});
