import { z } from 'zod';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { anonymousContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { createGatewayApp, type GatewayApp } from '../shared/app.ts';
import type { GatewayDeps } from '../shared/bridge.ts';
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
      guard: opts.deps.guard,
      probes: {
        // Liveness touches no store.
        liveness: {
          schema: z.object({ status: z.literal('ok'), version: z.string(), uptime_seconds: z.number().int() }),
          answer: () => ({
            status: 'ok' as const,
            version: opts.version,
            uptime_seconds: Math.floor((Date.now() - started) / 1000),
          }),
        },
        readiness: async (req) => {
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
          return {
            ready: relational === 'ok' && analyticsStatus === 'ok',
            checks: { relational_store: relational, analytics_store: analyticsStatus },
          };
        },
      },
    },
    async (app) => {
      await registerInvoicingRoutes(app, opts.deps);
    },
  );
  return { app, close: () => pgProbe.close() };
}
