import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { traceOf } from '../request-context.ts';
import { appPlugin } from './define.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `X-Request-Id` when well-formed, otherwise a new UUID. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** Query and path parameters whose values are credentials (SSO code and state, one-time tokens, keys): never logged. */
const SECRET_PARAM = /^(code|state|token|mfa_token|refresh_token|access_token|api_key|password|binding)$/i;

/**
 * The URL as it goes into the access log: values of secret query parameters, and path segments the route names as a
 * secret parameter (`/hooks/:token`), replaced by `REDACTED`.
 */
export function redactUrl(url: string, routePattern?: string): string {
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  if (routePattern?.includes(':')) {
    const names = routePattern.split('/');
    const parts = path.split('/');
    const secret = (name: string | undefined): boolean =>
      name !== undefined && name.startsWith(':') && SECRET_PARAM.test(name.slice(1));
    if (names.length === parts.length) path = parts.map((part, i) => (secret(names[i]) ? 'REDACTED' : part)).join('/');
  }
  if (q < 0) return path;
  const query = new URLSearchParams(url.slice(q + 1));
  for (const name of [...new Set(query.keys())]) if (SECRET_PARAM.test(name)) query.set(name, 'REDACTED');
  return `${path}?${query.toString()}`;
}

/** Every answer names its request id (`X-Request-Id`); one access line per request, with it. */
export const requestLog = appPlugin('gateway-request-log', async (app) => {
  app.addHook('onRequest', (req, reply, done) => {
    void reply.header('x-request-id', req.id);
    done();
  });
  app.addHook('onResponse', (req, reply, done) => {
    req.log.info(
      {
        request_id: req.id,
        trace_id: traceOf(req).traceId,
        method: req.method,
        url: redactUrl(req.url, req.routeOptions.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
    done();
  });
});
