import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { keepErrorBody } from '../errors.ts';
import { appPlugin } from './define.ts';

export interface ProbeOptions {
  /** What /healthz answers (liveness: touches no store), and its documented shape. */
  liveness: { schema: z.ZodType; answer: () => Record<string, unknown> };
  /** The readiness checks behind /readyz: ready or not, and (when given) what each check said. */
  readiness: (req: FastifyRequest) => Promise<{ ready: boolean; checks?: Record<string, string> }>;
}

/** The probes: /healthz (200 while the process serves) and /readyz (200 ready, 503 not ready), both unlisted. */
export const probes = appPlugin<ProbeOptions>('gateway-probes', async (app, { liveness, readiness }) => {
  app.get('/healthz', { schema: { hide: true, response: { 200: liveness.schema } } }, async () => liveness.answer());
  app.get('/readyz', { schema: { hide: true } }, async (req, reply) => {
    const { ready, checks } = await readiness(req);
    // The 503 body is the document's probe format, not the error envelope.
    return keepErrorBody(reply)
      .status(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : 'not_ready', ...(checks ? { checks } : {}) });
  });
});
