import { z } from 'zod';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { LazyNats } from '../../platform/nats.ts';
import { UploadStore } from '../../actors/servicedesk/mod.ts';
import { createGatewayApp, type GatewayApp } from '../shared/app.ts';
import type { GatewayDeps } from '../shared/bridge.ts';
import { PostgresProbe, withTimeout } from '../shared/probes.ts';
import { registerConsoleRoutes } from './routes/index.ts';
import { webConsole } from './web-console.ts';

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
      pages: (app) => webConsole(app, { connect: [opts.config.SVC_BACKEND_URL, opts.config.SVC_INVOICING_PUBLIC_URL] }),
      guard: opts.deps.guard,
      probes: {
        liveness: { schema: z.object({ status: z.literal('ok') }), answer: () => ({ status: 'ok' as const }) },
        readiness: async () => {
          // With a breaker, its health check is the broker signal: the answer here also moves the breaker (one ping
          // for both).
          const brokerCheck = opts.deps.breaker ? opts.deps.breaker.check() : opts.nats.healthy(1500);
          const [db, broker] = await Promise.all([
            withTimeout(pgProbe.check(), 2000, 'timeout'),
            withTimeout(brokerCheck, 2000, false),
          ]);
          return { ready: db === 'ok' && broker };
        },
      },
    },
    async (app) => {
      // Files on their way to an actor (service-desk attachments) go through the broker's object store.
      await registerConsoleRoutes(app, opts.deps, opts.config, new UploadStore(() => opts.nats.ready));
    },
  );
  return { app, close: () => pgProbe.close() };
}
