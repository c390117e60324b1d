import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../../../contracts/errors.ts';
import type { GatewayDeps } from '../bridge.ts';
import { sendError, type ServiceStyle } from '../errors.ts';
import { appPlugin } from './define.ts';

/** Answers a request no route took with a page (the web console), or undefined to leave it a 404. */
export type PageServer = (req: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined;

/**
 * A request for no route is answered 404 in the envelope, naming what was asked for, unless the service serves pages
 * and this is one of them.
 */
export const notFound = appPlugin<{ style: ServiceStyle; pages?: PageServer }>(
  'gateway-not-found',
  async (app, { style, pages }) => {
    app.setNotFoundHandler((req, reply) => {
      const page = pages?.(req, reply);
      if (page) return page;
      return sendError(
        style,
        req,
        reply,
        new DomainError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`),
      );
    });
  },
);

/**
 * A request for a route that does not exist is still a request: under /api it counts against the general limit, so
 * probing for routes is throttled like anything else. The probes, metrics and the explorer stay unlimited.
 */
export const unknownRoutesLimited = appPlugin<{ guard: NonNullable<GatewayDeps['guard']> }>(
  'gateway-unknown-routes-limited',
  async (app, { guard }) => {
    app.addHook('onRequest', async (req) => {
      if (req.is404 && req.url.startsWith('/api/')) await guard(req, 'api');
    });
  },
);
