import helmet from '@fastify/helmet';
import { appPlugin } from './define.ts';

/**
 * Security headers, an API profile (docs/api/conventions.md), on every answer including errors: registered before the
 * other plugins' hooks so an early refusal (missing Host, shutting down) carries them too.
 */
export const securityHeaders = appPlugin<{ https: boolean }>('gateway-security-headers', async (app, { https }) => {
  await app.register(helmet, {
    // JSON needs nothing loaded and is never framed; a route that serves a page sets its own policy (the invoice preview).
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    // Only a service whose public URL is https may tell browsers to insist on it (a plain-HTTP one would lock them out).
    hsts: https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    // Cross-origin reads are CORS's to allow (SVC_CORS_ORIGINS), not this header's to block.
    crossOriginResourcePolicy: false,
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    // Tokens and anything a caller is allowed to see must not stay in a browser's or proxy's cache (RFC 6749 §5.1,
    // OWASP ASVS): no-store unless the route chose its own caching.
    if (!reply.hasHeader('cache-control')) void reply.header('cache-control', 'no-store');
    return payload;
  });
});
