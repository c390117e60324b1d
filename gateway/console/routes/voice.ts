import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DomainError } from '../../../contracts/errors.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

/** Form fields as received, in order, for the signature check. */
type Pairs = [string, string][];

const signatureOf = (req: FastifyRequest): string => {
  const v = req.headers['x-twilio-signature'];
  return (Array.isArray(v) ? v[0] : v)?.slice(0, 200) ?? '';
};
const pairsOf = (req: FastifyRequest): Pairs => (Array.isArray(req.body) ? (req.body as Pairs).slice(0, 200) : []);
const sendTwiml = (data: { twiml: string }, reply: FastifyReply): FastifyReply =>
  reply.header('content-type', 'text/xml; charset=utf-8').send(data.twiml);

/**
 * The voice provider's callbacks (`/api/v1/twilio/voice/…`): form-encoded, authenticated by `X-Twilio-Signature`
 * (checked by the events actor over the public URL, SVC_BACKEND_URL + this request's path and query). TwiML answers
 * are `text/xml`; the status callback answers 204.
 */
export async function registerVoiceRoutes(app: GatewayApp, deps: GatewayDeps): Promise<void> {
  await app.register(async (raw) => {
    const scoped = raw as unknown as GatewayApp;
    scoped.removeAllContentTypeParsers();
    scoped.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
      done(null, [...new URLSearchParams(body as string)]),
    );
    scoped.addContentTypeParser('*', (_req, _payload, done) =>
      done(new DomainError('bad_request', 'send application/x-www-form-urlencoded'), undefined),
    );
    const open = routeGroup(scoped, deps, { auth: 'public', tags: ['voice'] });
    open({
      method: 'POST',
      url: '/api/v1/twilio/voice/twiml/:callID',
      subject: 'svc.events.voice.twiml',
      rate: 'api',
      params: z.object({ callID: z.uuid() }),
      input: ({ params, req }) => ({
        call_id: params.callID,
        path: req.url,
        params: pairsOf(req),
        signature: signatureOf(req),
      }),
      send: sendTwiml,
    });
    open({
      method: 'POST',
      url: '/api/v1/twilio/voice/gather',
      subject: 'svc.events.voice.gather',
      rate: 'api',
      input: ({ req }) => ({ path: req.url, params: pairsOf(req), signature: signatureOf(req) }),
      send: sendTwiml,
    });
    open({
      method: 'POST',
      url: '/api/v1/twilio/voice/status',
      subject: 'svc.events.voice.status',
      rate: 'api',
      input: ({ req }) => ({ path: req.url, params: pairsOf(req), signature: signatureOf(req) }),
      status: 204,
    });
  });
}
