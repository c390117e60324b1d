import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';
import { appPlugin } from './define.ts';

/**
 * The headers helmet's middleware sets for `options`, computed once by running it against a response that only
 * records them. Nothing in this profile depends on the request (no nonces, no per-request directive functions), so
 * every answer gets the same set, set in one synchronous hook (@fastify/helmet builds the whole middleware again for
 * every request).
 */
export function helmetHeaders(options: Readonly<HelmetOptions>): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
      return recorder;
    },
    removeHeader(name: string) {
      delete headers[name.toLowerCase()];
    },
  };
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, (err?: unknown) => {
    if (err) throw err instanceof Error ? err : new Error(String(err));
  });
  return headers;
}

/**
 * Security headers, an API profile (docs/api/conventions.md), on every answer including errors: registered before the
 * other plugins' hooks so an early refusal (missing Host, shutting down) carries them too. A route may replace one
 * (`reply.header`) or drop it (`reply.removeHeader`), as a page with its own policy does.
 */
export const securityHeaders = appPlugin<{ https: boolean }>('gateway-security-headers', async (app, { https }) => {
  const headers = helmetHeaders({
    // JSON needs nothing loaded and is never framed; a route that serves a page sets its own policy (the invoice preview).
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    // Only a service whose public URL is https may tell browsers to insist on it (a plain-HTTP one would lock them out).
    hsts: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    // Cross-origin reads are CORS's to allow (SVC_CORS_ORIGINS), not this header's to block.
    crossOriginResourcePolicy: false,
  });
  app.addHook('onRequest', (_req, reply, done) => {
    void reply.headers(headers);
    done();
  });
  app.addHook('onSend', (_req, reply, payload, done) => {
    // Tokens and anything a caller is allowed to see must not stay in a browser's or proxy's cache (RFC 6749 §5.1,
    // OWASP ASVS): no-store unless the route chose its own caching.
    if (!reply.hasHeader('cache-control')) void reply.header('cache-control', 'no-store');
    done(null, payload);
  });
});
