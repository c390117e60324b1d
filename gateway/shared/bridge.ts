import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Caller } from '../../actors/runtime/call.ts';
import type { Cat } from '../../contracts/catalogue.ts';
import { anonymousContext, type CallerContext } from '../../contracts/context.ts';
import type { Catalogue, RequestIn, ReplyOut, SubjectName } from '../../contracts/subject.ts';
import type { GatewayApp } from './app.ts';
import { clientInfo, type AuthMode, type Authenticator } from './auth.ts';
import { deadlineOf, setDeadline, traceparentOf } from './request-context.ts';

/** What every route of a gateway needs to reach the actors. */
export interface GatewayDeps<C extends Catalogue = Cat> {
  caller: Caller<C>;
  auth: Authenticator;
  requestTimeoutMs: number;
  /** Optional per-route guard run before authentication (rate limits). */
  guard?: (req: FastifyRequest, kind: RateClass) => Promise<void>;
}

/** Which rate-limit bucket a route counts against. */
export type RateClass = 'auth' | 'api' | 'none';

type Schema = z.ZodType;
type Out<T> = T extends Schema ? z.output<T> : undefined;

export interface BridgeRoute<C extends Catalogue, S extends SubjectName<C>, P extends Schema | undefined, Q extends Schema | undefined, B extends Schema | undefined> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  subject: S;
  auth: AuthMode;
  rate?: RateClass;
  tags?: string[];
  summary?: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Builds the subject's input from the validated request. */
  input: (r: { params: Out<P>; query: Out<Q>; body: Out<B>; ctx: CallerContext; req: FastifyRequest }) => RequestIn<C, S>;
  /** Success status (default 200); 204 sends no body. */
  status?: number;
  /**
   * The subject answers a page (`{ items, total, page, per_page }`): the route replies with the list envelope
   * `{ data, meta: { total, page, per_page } }` and documents it.
   */
  paged?: ReplyOut<C, S> extends Page ? true : never;
  /** Custom reply (HTML, PDF, redirects). Default: `{ data }`. */
  send?: (data: ReplyOut<C, S>, reply: FastifyReply, req: FastifyRequest) => unknown;
}

/** What a paginated subject answers. */
export interface Page {
  items: unknown[];
  total: number;
  page: number;
  per_page: number;
}

const Meta = z.object({ total: z.number().int(), page: z.number().int(), per_page: z.number().int() });

/** The documented success body of a route: `{ data }`, the list envelope, or nothing for 204. */
function responseSchema(reply: z.ZodType, paged: boolean, status: number): z.ZodType {
  if (status === 204) return z.null().describe('No content');
  if (paged && reply instanceof z.ZodObject && reply.shape.items) return z.object({ data: reply.shape.items as z.ZodType, meta: Meta });
  return z.object({ data: reply });
}

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
  app.route({
    method: route.method,
    url: route.url,
    schema: {
      ...(route.params ? { params: route.params } : {}),
      ...(route.query ? { querystring: route.query } : {}),
      ...(route.body ? { body: route.body } : {}),
      summary: route.summary ?? spec.summary,
      ...(route.send ? {} : { response: { [route.status ?? 200]: responseSchema(spec.reply, route.paged === true, route.status ?? 200) } }),
      ...(route.tags ? { tags: route.tags } : {}),
      ...(route.auth === 'public' ? {} : { security: route.auth === 'authenticated' ? [{ bearer: [] }, { apiKey: [] }] : [{ bearer: [] }] }),
    },
    // Rate limits run before body validation so an anonymous flood costs little. The request's deadline starts
    // here: the limiter, authentication (which may ask the access resolver) and the call all fit inside it.
    onRequest: async (req) => {
      setDeadline(req, Date.now() + deps.requestTimeoutMs);
      if (deps.guard && rate !== 'none') await deps.guard(req, rate);
    },
    handler: async (req, reply) => {
      const ctx = route.auth === 'public' ? anonymousContext(req.id, clientInfo(req)) : await deps.auth.authenticate(req, route.auth);
      const input = route.input({ params: req.params as Out<P>, query: req.query as Out<Q>, body: req.body as Out<B>, ctx, req });
      const data = await deps.caller.call(route.subject, input, ctx, { deadline: deadlineOf(req, deps.requestTimeoutMs), traceparent: traceparentOf(req) });
      if (route.send) return route.send(data, reply, req);
      if (route.status === 204) return reply.status(204).send();
      if (route.paged) {
        const page = data as Page;
        return reply.status(route.status ?? 200).send({ data: page.items, meta: { total: page.total, page: page.page, per_page: page.per_page } });
      }
      return reply.status(route.status ?? 200).send({ data });
    },
  });
}

/** A route of a group: as for `bridge`, with the group's auth mode and tags unless the route names its own. */
export type GroupRoute<C extends Catalogue, S extends SubjectName<C>, P extends Schema | undefined, Q extends Schema | undefined, B extends Schema | undefined> = Omit<
  BridgeRoute<C, S, P, Q, B>,
  'auth'
> & { auth?: AuthMode };

/**
 * The routes of one resource file share how they are entered and their OpenAPI tags:
 * `const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['users'] }); route({ method, url, subject, ... })`.
 */
export function routeGroup<C extends Catalogue>(app: GatewayApp, deps: GatewayDeps<C>, defaults: { auth: AuthMode; tags: string[] }) {
  return <S extends SubjectName<C>, P extends Schema | undefined = undefined, Q extends Schema | undefined = undefined, B extends Schema | undefined = undefined>(
    route: GroupRoute<C, S, P, Q, B>,
  ): void => bridge<C, S, P, Q, B>(app, deps, { ...route, auth: route.auth ?? defaults.auth, tags: route.tags ?? defaults.tags });
}

/** Pagination query of both services: page ≥ 1 (default 1), per_page 1..100 (default 20). */
export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
});
