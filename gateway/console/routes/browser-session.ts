import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import {
  AcceptInviteRequest,
  LoginRequest,
  MfaChallenge,
  MfaVerifyRequest,
  TokenResponse,
} from '../../../contracts/domains/identity-auth.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Config } from '../../../platform/config.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';
import { cookieLine, readCookie } from './sso.ts';

/**
 * The web console's sessions (docs/api/identity.md#browser-sessions): the same sign-in subjects as the JSON routes,
 * but the refresh token travels only in an httpOnly cookie that page scripts cannot read, sent only to this path.
 * Refresh and sign-out also need the CSRF token: a readable cookie the page echoes in a header, which another site
 * can neither read nor send (double submit; both cookies are SameSite=Strict on top).
 */
export const REFRESH_COOKIE = 'svc_refresh';
export const CSRF_COOKIE = 'svc_csrf';
export const CSRF_HEADER = 'x-csrf-token';
export const BROWSER_AUTH_PATH = '/api/v1/auth/browser';

/** A token response without its refresh token, which went into the cookie. */
export const BrowserTokenResponse = TokenResponse.omit({ refresh_token: true });
export type BrowserTokenResponse = z.infer<typeof BrowserTokenResponse>;

const tags = ['auth'];

interface CookieOptions {
  secure: boolean;
  maxAgeSeconds: number;
}

const cookie = (name: string, value: string, path: string, httpOnly: boolean, o: CookieOptions): string =>
  cookieLine(name, value, { path, httpOnly, sameSite: 'Strict', maxAgeSeconds: o.maxAgeSeconds, secure: o.secure });

/** Sets the session's cookies (a fresh CSRF token with each refresh token) and answers without the refresh token. */
function sendTokens(reply: FastifyReply, tokens: TokenResponse, o: CookieOptions): FastifyReply {
  const csrf = randomBytes(32).toString('base64url');
  void reply.header('set-cookie', [
    cookie(REFRESH_COOKIE, tokens.refresh_token, BROWSER_AUTH_PATH, true, o),
    cookie(CSRF_COOKIE, csrf, '/', false, o),
  ]);
  const { refresh_token: _kept, ...rest } = tokens;
  return reply.header('cache-control', 'no-store').send({ data: rest });
}

function clearCookies(reply: FastifyReply, secure: boolean): void {
  const gone = { secure, maxAgeSeconds: 0 };
  void reply.header('set-cookie', [
    cookie(REFRESH_COOKIE, '', BROWSER_AUTH_PATH, true, gone),
    cookie(CSRF_COOKIE, '', '/', false, gone),
  ]);
}

/** The refresh cookie, once the request proves it comes from the console's own page (the CSRF header). */
export function cookieRefreshToken(req: FastifyRequest): string {
  const token = readCookie(req, REFRESH_COOKIE);
  if (!token) throw new DomainError('unauthorized', 'no browser session: sign in again');
  const expected = readCookie(req, CSRF_COOKIE);
  const given = req.headers[CSRF_HEADER];
  if (
    !expected ||
    typeof given !== 'string' ||
    given.length !== expected.length ||
    !timingSafeEqual(Buffer.from(given), Buffer.from(expected))
  )
    throw new DomainError(
      'unauthorized',
      `the ${CSRF_HEADER} header is missing or does not match the ${CSRF_COOKIE} cookie`,
    );
  return token;
}

/** POST /api/v1/auth/browser/{login,mfa/verify,accept-invite,refresh,logout} (and sso/exchange with SSO). */
export function registerBrowserSessionRoutes(app: GatewayApp, deps: GatewayDeps, config: Config): void {
  const o: CookieOptions = {
    secure: new URL(config.SVC_BACKEND_URL).protocol === 'https:',
    maxAgeSeconds: config.SVC_JWT_REFRESH_TTL,
  };
  const open = routeGroup(app, deps, { auth: 'public', tags });
  const Tokens = z.object({ data: BrowserTokenResponse });
  open({
    method: 'POST',
    url: `${BROWSER_AUTH_PATH}/login`,
    subject: 'svc.identity.auth.login',
    operationId: 'identity_auth_browser_login',
    summary: 'Signs in as the web console does: tokens without the refresh token, which is set as a cookie.',
    rate: 'auth',
    body: LoginRequest,
    input: ({ body }) => body,
    answer: z.object({ data: z.union([BrowserTokenResponse, MfaChallenge]) }),
    send: (data, reply) => ('mfa_required' in data ? reply.status(202).send({ data }) : sendTokens(reply, data, o)),
  });
  open({
    method: 'POST',
    url: `${BROWSER_AUTH_PATH}/mfa/verify`,
    subject: 'svc.identity.auth.mfa_verify',
    operationId: 'identity_auth_browser_mfa_verify',
    summary: 'Completes a browser sign-in with a TOTP or recovery code; the refresh token is set as a cookie.',
    rate: 'auth',
    body: MfaVerifyRequest,
    input: ({ body }) => body,
    answer: Tokens,
    send: (data, reply) => sendTokens(reply, data, o),
  });
  open({
    method: 'POST',
    url: `${BROWSER_AUTH_PATH}/accept-invite`,
    subject: 'svc.identity.auth.accept_invite',
    operationId: 'identity_auth_browser_accept_invite',
    summary: 'Accepts an invitation from the web console; the refresh token is set as a cookie.',
    rate: 'auth',
    body: AcceptInviteRequest,
    input: ({ body }) => body,
    answer: Tokens,
    send: (data, reply) => sendTokens(reply, data, o),
  });
  open({
    method: 'POST',
    url: `${BROWSER_AUTH_PATH}/refresh`,
    subject: 'svc.identity.auth.refresh',
    operationId: 'identity_auth_browser_refresh',
    summary: `Rotates the browser session's refresh cookie; needs the ${CSRF_HEADER} header.`,
    rate: 'auth',
    input: ({ req }) => ({ refresh_token: cookieRefreshToken(req) }),
    answer: Tokens,
    send: (data, reply) => sendTokens(reply, data, o),
  });
  open({
    method: 'POST',
    url: `${BROWSER_AUTH_PATH}/logout`,
    subject: 'svc.identity.auth.logout',
    operationId: 'identity_auth_browser_logout',
    summary: `Ends the browser session and clears its cookies; needs the ${CSRF_HEADER} header and the access token.`,
    auth: 'enrolment',
    rate: 'api',
    input: ({ req }) => ({ refresh_token: cookieRefreshToken(req) }),
    answer: z.object({ data: z.object({ message: z.string() }) }),
    send: (data, reply) => {
      clearCookies(reply, o.secure);
      return reply.send({ data });
    },
  });
  if (config.SVC_SSO_CLIENT_ID)
    open({
      method: 'POST',
      url: `${BROWSER_AUTH_PATH}/sso/exchange`,
      subject: 'svc.identity.sso.exchange',
      operationId: 'identity_auth_browser_sso_exchange',
      summary: 'Redeems a single sign-on code in the web console; the refresh token is set as a cookie.',
      rate: 'auth',
      body: z.object({ code: z.string().min(1, 'must not be empty').max(256, 'is too long') }),
      input: ({ body }) => body,
      answer: Tokens,
      send: (data, reply) => sendTokens(reply, data, o),
    });
}
