import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { z } from 'zod';
import { Caller } from '../../platform/call.ts';
import { createLogger } from '../../platform/logger.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../../gateway/shared/app.ts';
import { bridge, type GatewayDeps } from '../../gateway/shared/bridge.ts';
import { testSigner } from '../support/env.ts';
import { testCatalogue, type TestCat } from '../support/test-catalogue.ts';

/**
 * Issue 25, item 9 (and item 11's accept-invite): the API profile of security headers, per route class. Every answer
 * carries nosniff, no-referrer and a policy that forbids framing; every token and authenticated answer (and every
 * other one, unless its route chose its own caching) is `Cache-Control: no-store`; HSTS only for an https service.
 * Checked on a gateway of its own (security-headers.unit.test.ts, and security-headers.test.ts for the answers written
 * on the socket) and on the running system (security-headers.test.ts).
 */
type Headers = LightMyRequestResponse['headers'] | Record<string, string>;

export function expectApiProfile(headers: Headers, what: string): void {
  expect(headers['x-content-type-options'], what).toBe('nosniff');
  expect(headers['cache-control'], what).toBe('no-store');
  expect(headers['referrer-policy'], what).toBe('no-referrer');
  expect(headers['content-security-policy'], what).toBe("default-src 'none';frame-ancestors 'none'");
  expect(headers['x-frame-options'], what).toBe('DENY');
  expect(headers['strict-transport-security'], what).toBeUndefined();
}

/** A console gateway with one bridged route that refuses every caller, and one route choosing its own caching. */
export function buildProfileApp(publicUrl?: string): Promise<GatewayApp> {
  const deps: GatewayDeps<TestCat> = {
    // Nothing here reaches an actor: the route refuses the caller first.
    caller: new Caller(() => undefined, testCatalogue, testSigner()),
    requestTimeoutMs: 1000,
    auth: { authenticate: async () => Promise.reject(new DomainError('unauthorized', 'missing credentials')) },
  };
  return createGatewayApp(
    {
      style: 'console',
      title: 't',
      version: '1',
      ...(publicUrl ? { publicUrl } : {}),
      config: { SVC_CORS_ORIGINS: [], SVC_ENABLE_DEBUG_ENDPOINTS: false },
      log: createLogger('silent'),
    },
    (app) => {
      bridge(app, deps, {
        method: 'GET',
        url: '/api/v1/sleep/:ms',
        subject: 'svc.rtest.sleep',
        auth: 'authenticated',
        params: z.object({ ms: z.coerce.number().int() }),
        input: ({ params }) => params,
      });
      app.get('/cached', async (_req, reply) => reply.header('cache-control', 'public, max-age=60').send({ ok: true }));
      // A page with a policy of its own, meant to be framed (as the invoice preview is).
      app.get('/framed', async (_req, reply) =>
        reply
          .header('content-security-policy', "sandbox; default-src 'none'")
          .removeHeader('x-frame-options')
          .send({ ok: true }),
      );
    },
  );
}
