import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ALERT_ROUTERS, WEBHOOK_SOURCES, type ReceiverSource } from '../../../contracts/domains/events-records.ts';
import { RECEIVER_HEADERS, type ReceiveReply } from '../../../contracts/domains/events.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const HookParams = z.object({ source: z.string().max(32), token: z.string().min(1).max(100) });
const AlertParams = z.object({ router: z.string().max(32), token: z.string().min(1).max(100) });

/** The headers a receiver reads, lower-case, first value only. */
function receiverHeaders(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of RECEIVER_HEADERS) {
    const v = req.headers[name];
    const value = Array.isArray(v) ? v[0] : v;
    if (typeof value === 'string') out[name] = value.slice(0, 8192);
  }
  return out;
}

/** Durable deliveries are 202 (a consumer stores them); a ping or a delivery with nothing to record is 200. */
const RECEIVE_STATUS: Record<ReceiveReply['outcome'], 200 | 202> = {
  accepted: 202,
  duplicate: 202,
  ignored: 200,
  pong: 200,
};

const sourceOf = (value: string, known: readonly string[]): ReceiverSource => {
  if (!known.includes(value))
    throw new DomainError('not_found', `no receiver for ${JSON.stringify(value.slice(0, 32))}`);
  return value as ReceiverSource;
};

/**
 * The public receivers (docs/api/events.md#receivers-public): token in the path, no user authentication.
 * Their body is kept raw (base64 to the actor), whatever its content type, since signatures are over its exact bytes;
 * the 1 MB limit applies (413). Answers: 202 accepted (durable), 200 for a ping or a delivery with nothing to record,
 * 400 for a payload that cannot be used (kept as a rejected delivery), 401 for a wrong signature, 404 for an unknown
 * or revoked token. They count on the general rate limit, not the authentication one.
 */
export async function registerReceiverRoutes(app: GatewayApp, deps: GatewayDeps): Promise<void> {
  await app.register(async (raw) => {
    const scoped = raw as unknown as GatewayApp;
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) =>
      done(null, (body as Buffer).toString('base64')),
    );
    const open = routeGroup(scoped, deps, { auth: 'public', tags: ['receivers'] });
    const reply = {
      send: (data: ReceiveReply, r: FastifyReply) => r.status(RECEIVE_STATUS[data.outcome]).send({ data }),
    };
    open({
      method: 'POST',
      url: '/api/v1/webhooks/:source/:token',
      subject: 'svc.events.receive',
      rate: 'api',
      params: HookParams,
      input: ({ params, req }) => ({
        source: sourceOf(params.source, WEBHOOK_SOURCES),
        token: params.token,
        headers: receiverHeaders(req),
        body_b64: typeof req.body === 'string' ? req.body : '',
      }),
      ...reply,
    });
    open({
      method: 'POST',
      url: '/api/v1/alerts/webhook/:router/:token',
      subject: 'svc.events.receive',
      // The same subject as the webhooks above: its own id keeps operation ids unique.
      operationId: 'events_receive_alert',
      rate: 'api',
      params: AlertParams,
      input: ({ params, req }) => ({
        source: sourceOf(params.router, ALERT_ROUTERS),
        token: params.token,
        headers: receiverHeaders(req),
        body_b64: typeof req.body === 'string' ? req.body : '',
      }),
      ...reply,
    });
  });
}
