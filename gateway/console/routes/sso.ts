import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { SsoCallbackParams } from '../../../contracts/domains/identity-sso.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, type GatewayDeps } from '../../shared/bridge.ts';

/** Browser-binding cookie of an SSO flow: only the browser that started a flow can finish it. */
export const SSO_BINDING_COOKIE = 'svc_sso_binding';
const COOKIE_PATH = '/api/v1/auth/sso';
const MAX_COOKIE_VALUE = 256;
const tags = ['auth'];

/** GET /api/v1/auth/config: public, always present (the login page asks whether to offer SSO). */
export function registerSsoConfigRoute(app: GatewayApp, deps: GatewayDeps): void {
  // Counted as an ordinary request: the login page loads it on every visit, it must not eat the 5-per-minute budget.
  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/auth/config',
    subject: 'svc.identity.sso.config',
    auth: 'public',
    rate: 'api',
    tags,
    input: () => ({}),
  });
}

/** The SSO routes; registered only when SVC_SSO_CLIENT_ID is set (otherwise they answer 404). */
export function registerSsoRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/auth/sso',
    subject: 'svc.identity.sso.start',
    auth: 'public',
    rate: 'auth',
    tags,
    input: () => ({}),
    send: (data, reply) => {
      if (data.binding) setBindingCookie(reply, data.binding, data.binding_max_age_seconds, data.secure_cookie);
      return redirect(reply, data.redirect_url);
    },
  });

  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/auth/sso/callback',
    subject: 'svc.identity.sso.callback',
    auth: 'public',
    // The provider's redirect carries a single-use, unguessable state: counting it as an auth attempt would let one
    // sign-in use up most of the 5-per-minute budget of the public authentication routes.
    rate: 'api',
    tags,
    query: SsoCallbackParams,
    input: ({ query, req }) => {
      const binding = readCookie(req, SSO_BINDING_COOKIE);
      return { ...query, ...(binding ? { binding } : {}) };
    },
    send: (data, reply) => {
      // The binding is single-use like the state: the cookie goes whatever the outcome.
      setBindingCookie(reply, '', 0, data.secure_cookie);
      return redirect(reply, data.redirect_url);
    },
  });

  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/auth/sso/exchange',
    subject: 'svc.identity.sso.exchange',
    auth: 'public',
    rate: 'auth',
    tags,
    body: z.object({ code: z.string().min(1, 'must not be empty').max(256, 'is too long') }),
    input: ({ body }) => body,
    send: (data, reply) => reply.header('cache-control', 'no-store').send({ data }),
  });
}

function redirect(reply: FastifyReply, url: string): FastifyReply {
  return reply.status(307).header('location', url).header('cache-control', 'no-store').send();
}

function setBindingCookie(reply: FastifyReply, value: string, maxAgeSeconds: number, secure: boolean): void {
  void reply.header(
    'set-cookie',
    cookieLine(SSO_BINDING_COOKIE, value, {
      path: COOKIE_PATH,
      maxAgeSeconds,
      httpOnly: true,
      sameSite: 'Lax',
      secure,
    }),
  );
}

/** One Set-Cookie line (RFC 6265): the gateway's cookies are all set through this. */
export function cookieLine(
  name: string,
  value: string,
  o: { path: string; maxAgeSeconds: number; httpOnly: boolean; sameSite: 'Lax' | 'Strict'; secure: boolean },
): string {
  const parts = [`${name}=${value}`, `Path=${o.path}`, `Max-Age=${o.maxAgeSeconds}`];
  if (o.httpOnly) parts.push('HttpOnly');
  parts.push(`SameSite=${o.sameSite}`);
  if (o.secure) parts.push('Secure');
  return parts.join('; ');
}

/** One cookie from the Cookie header (no cookie plugin needed for a single value); over-long values are ignored. */
export function readCookie(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value && value.length <= MAX_COOKIE_VALUE ? value : undefined;
  }
  return undefined;
}
