import { z } from 'zod';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../shared/app.ts';
import type { GatewayDeps } from '../shared/bridge.ts';
import { keepErrorBody } from '../shared/errors.ts';
import { PostgresProbe, withTimeout } from '../shared/probes.ts';
import { traceparentOf } from '../shared/request-context.ts';
import { registerInvoicingRoutes } from './routes/index.ts';

export interface InvoicingGatewayOptions {
  config: Config;
  log: Logger;
  deps: GatewayDeps;
  version: string;
}

const started = Date.now();

export async function buildInvoicingGateway(
  opts: InvoicingGatewayOptions,
): Promise<{ app: GatewayApp; close: () => Promise<void> }> {
  const pgProbe = new PostgresProbe(opts.config.SVC_DB_URL);
  const app = await createGatewayApp(
    {
      style: 'invoicing',
      title: 'Invoicing API',
      version: opts.version,
      publicUrl: opts.config.SVC_INVOICING_PUBLIC_URL,
      config: opts.config,
      log: opts.log,
      breaker: opts.deps.breaker,
    },
    async (app) => {
      // As on the console: an unknown /api/ route still counts against the general limit; the probes never do.
      const guard = opts.deps.guard;
      if (guard) {
        app.addHook('onRequest', async (req) => {
          if (req.is404 && req.url.startsWith('/api/')) await guard(req, 'api');
        });
      }
      // Liveness touches no store.
      app.get(
        '/healthz',
        {
          schema: {
            hide: true,
            response: {
              200: z.object({ status: z.literal('ok'), version: z.string(), uptime_seconds: z.number().int() }),
            },
          },
        },
        async () => ({
          status: 'ok' as const,
          version: opts.version,
          uptime_seconds: Math.floor((Date.now() - started) / 1000),
        }),
      );
      app.get('/readyz', { schema: { hide: true } }, async (req, reply) => {
        const analytics = opts.deps.caller
          .call('svc.invoice.health', {}, anonymousContext(req.id), {
            timeoutMs: 2000,
            traceparent: traceparentOf(req),
          })
          .then((r) => r.analytics_store)
          .catch((err: unknown) => `unreachable: ${err instanceof DomainError ? err.message : 'unknown error'}`);
        const [relational, analyticsStatus] = await Promise.all([
          withTimeout(pgProbe.check(), 2500, 'timeout'),
          withTimeout(analytics, 2500, 'timeout'),
        ]);
        const ready = relational === 'ok' && analyticsStatus === 'ok';
        // The 503 body is the document's probe format, not the error envelope.
        return keepErrorBody(reply)
          .status(ready ? 200 : 503)
          .send({
            status: ready ? 'ready' : 'not_ready',
            checks: { relational_store: relational, analytics_store: analyticsStatus },
          });
      });
      await registerInvoicingRoutes(app, opts.deps);
    },
  );
  return { app, close: () => pgProbe.close() };
}
