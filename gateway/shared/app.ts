import Fastify, { LogController } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { BrokerBreaker } from './broker-breaker.ts';
import type { GatewayApp } from './gateway-app.ts';
import type { GatewayDeps } from './bridge.ts';
import type { ServiceStyle } from './errors.ts';
import { brokerRefusal } from './plugins/broker-refusal.ts';
import { corsPolicy } from './plugins/cors.ts';
import { debugEndpoints } from './plugins/debug-endpoints.ts';
import { drainOnClose } from './plugins/drain.ts';
import { errorEnvelope } from './plugins/error-envelope.ts';
import { earlyRefusals, protocolRefusals } from './plugins/http-refusals.ts';
import { notFound, unknownRoutesLimited, type PageServer } from './plugins/not-found.ts';
import { probes, type ProbeOptions } from './plugins/probes.ts';
import { requestIdOf, requestLog } from './plugins/request-log.ts';
import { securityHeaders } from './plugins/security-headers.ts';
import { schemaValidation } from './plugins/validation.ts';

export { redactUrl } from './plugins/request-log.ts';

export const BODY_LIMIT = 1024 * 1024;

export type { GatewayApp };

export interface GatewayAppOptions {
  style: ServiceStyle;
  title: string;
  version: string;
  /** Where clients reach this service (the OpenAPI document's `servers`); unset: relative to the document. */
  publicUrl?: string;
  config: Pick<Config, 'SVC_CORS_ORIGINS' | 'SVC_ENABLE_DEBUG_ENDPOINTS'>;
  log: Logger;
  trustProxy?: boolean;
  /**
   * On close, how long connections that are still open (kept alive between requests) are given before they are cut;
   * a request that arrives on one meanwhile is answered 503 with `Connection: close`. Default 1000 ms.
   */
  drainMs?: number;
  /** Refuses new `/api/` requests at once while the message broker is not answering (broker-breaker.ts). */
  breaker?: Pick<BrokerBreaker, 'refusal'>;
  /** The general rate limit, which requests for unknown `/api/` routes count against too. */
  guard?: GatewayDeps['guard'];
  /** The service's /healthz and /readyz. */
  probes?: ProbeOptions;
  /** Pages the service serves where no route matches (the console's web app): set up on the app before its routes. */
  pages?: (app: GatewayApp) => Promise<PageServer | undefined>;
}

/**
 * A Fastify app with the shared plugins of both gateways: request id, error envelope, 1 MB body limit, CORS,
 * zod validation, and (only when debug endpoints are enabled) the OpenAPI explorer and Prometheus metrics.
 * Routes are added by the caller inside `register` so the OpenAPI document sees them.
 */
export async function createGatewayApp(
  opts: GatewayAppOptions,
  register: (app: GatewayApp) => Promise<void> | void,
): Promise<GatewayApp> {
  const { style } = opts;
  const https = opts.publicUrl?.startsWith('https:') === true;
  const app = Fastify({
    loggerInstance: opts.log,
    bodyLimit: BODY_LIMIT,
    trustProxy: opts.trustProxy ?? false,
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
    // A missing Host is refused by protocolRefusals, in the envelope, instead of Node's bare 400.
    http: { requireHostHeader: false },
    ...earlyRefusals(style, opts.log),
    // One access line per request is written by requestLog, with the request id.
    logController: new LogController({ disableRequestLogging: true }),
    // A path parameter longer than maxParamLength is refused with 414 (earlyRefusals) before any route runs.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 100 },
    // While closing, a request that still arrives (on a kept-alive connection) gets the service's own 503 envelope
    // from drainOnClose instead of Fastify's body; Fastify still marks the connection to close.
    return503OnClosing: false,
  }).withTypeProvider<ZodTypeProvider>();

  // The order is the order of their hooks: the security headers first, so every refusal carries them.
  await app.register(securityHeaders, { https });
  await app.register(schemaValidation);
  await app.register(requestLog);
  await app.register(drainOnClose, { style, drainMs: opts.drainMs ?? 1000 });
  await app.register(protocolRefusals, { style });
  await app.register(errorEnvelope, { style });
  const pages = opts.pages ? await opts.pages(app) : undefined;
  await app.register(notFound, { style, ...(pages ? { pages } : {}) });
  await app.register(corsPolicy, { origins: opts.config.SVC_CORS_ORIGINS });
  if (opts.breaker) await app.register(brokerRefusal, { style, breaker: opts.breaker });
  if (opts.config.SVC_ENABLE_DEBUG_ENDPOINTS) {
    const { title, version, publicUrl } = opts;
    await app.register(debugEndpoints, { style, title, version, publicUrl, https });
  }
  if (opts.guard) await app.register(unknownRoutesLimited, { guard: opts.guard });
  if (opts.probes) await app.register(probes, opts.probes);

  await register(app);
  return app;
}
