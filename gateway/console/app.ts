import { z } from 'zod';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { LazyNats } from '../../platform/nats.ts';
import { UploadStore } from '../../actors/servicedesk/mod.ts';
import { createGatewayApp, type GatewayApp } from '../shared/app.ts';
import type { GatewayDeps } from '../shared/bridge.ts';
import { keepErrorBody } from '../shared/errors.ts';
import { PostgresProbe, withTimeout } from '../shared/probes.ts';
import { registerConsoleRoutes } from './routes/index.ts';

export interface ConsoleGatewayOptions {
  config: Config;
  log: Logger;
  /** The broker connection: readiness and uploads only (an offline document build passes one that never connects). */
  nats: Pick<LazyNats, 'ready' | 'healthy'>;
  deps: GatewayDeps;
  version: string;
}

export async function buildConsoleGateway(
  opts: ConsoleGatewayOptions,
): Promise<{ app: GatewayApp; close: () => Promise<void> }> {
  const pgProbe = new PostgresProbe(opts.config.SVC_DB_URL);
  const app = await createGatewayApp(
    {
      style: 'console',
      title: 'Infrastructure console API',
      version: opts.version,
      publicUrl: opts.config.SVC_BACKEND_URL,
      config: opts.config,
      log: opts.log,
      breaker: opts.deps.breaker,
    },
    async (app) => {
      // A request for a route that does not exist is still a request: under /api it counts against the general limit,
      // so probing for routes is throttled like anything else. The probes below stay unlimited.
      const guard = opts.deps.guard;
      if (guard) {
        app.addHook('onRequest', async (req) => {
          if (req.is404 && req.url.startsWith('/api/')) await guard(req, 'api');
        });
      }
      app.get(
        '/healthz',
        { schema: { hide: true, response: { 200: z.object({ status: z.literal('ok') }) } } },
        async () => ({ status: 'ok' as const }),
      );
      app.get('/readyz', { schema: { hide: true } }, async (_req, reply) => {
        // With a breaker, its health check is the broker signal: the answer here also moves the breaker (one ping for both).
        const brokerCheck = opts.deps.breaker ? opts.deps.breaker.check() : opts.nats.healthy(1500);
        const [db, broker] = await Promise.all([
          withTimeout(pgProbe.check(), 2000, 'timeout'),
          withTimeout(brokerCheck, 2000, false),
        ]);
        const ready = db === 'ok' && broker;
        // The 503 body is the document's probe format, not the error envelope.
        return keepErrorBody(reply)
          .status(ready ? 200 : 503)
          .send({ status: ready ? 'ready' : 'not_ready' });
      });
      // Files on their way to an actor (service-desk attachments) go through the broker's object store.
      await registerConsoleRoutes(app, opts.deps, opts.config, new UploadStore(() => opts.nats.ready));
    },
  );
  return { app, close: () => pgProbe.close() };
}
