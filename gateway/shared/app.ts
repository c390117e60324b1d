import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { randomUUID } from 'node:crypto';
import { Registry, Counter, Histogram, collectDefaultMetrics } from 'prom-client';
import type { Config } from '../../actors/runtime/config.ts';
import type { Logger } from '../../actors/runtime/logger.ts';
import { DomainError } from '../../contracts/errors.ts';
import { sendError, toDomainError, type ServiceStyle } from './errors.ts';
import { traceOf } from './request-context.ts';
import { rejectNulCharacters } from './validation.ts';

export const BODY_LIMIT = 1024 * 1024;

export type GatewayApp = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  Logger,
  ZodTypeProvider
>;

export interface GatewayAppOptions {
  style: ServiceStyle;
  title: string;
  version: string;
  config: Pick<Config, 'SVC_CORS_ORIGINS' | 'SVC_ENABLE_DEBUG_ENDPOINTS'>;
  log: Logger;
  trustProxy?: boolean;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Query and path parameters whose values are credentials (SSO code and state, one-time tokens, keys): never logged. */
const SECRET_PARAM = /^(code|state|token|mfa_token|refresh_token|access_token|api_key|password|binding)$/i;

/**
 * The URL as it goes into the access log: values of secret query parameters, and path segments the route names as a
 * secret parameter (`/hooks/:token`), replaced by `REDACTED`.
 */
export function redactUrl(url: string, routePattern?: string): string {
  const q = url.indexOf('?');
  let path = q < 0 ? url : url.slice(0, q);
  if (routePattern?.includes(':')) {
    const names = routePattern.split('/');
    const parts = path.split('/');
    const secret = (name: string | undefined): boolean => name !== undefined && name.startsWith(':') && SECRET_PARAM.test(name.slice(1));
    if (names.length === parts.length) path = parts.map((part, i) => (secret(names[i]) ? 'REDACTED' : part)).join('/');
  }
  if (q < 0) return path;
  const query = new URLSearchParams(url.slice(q + 1));
  for (const name of [...new Set(query.keys())]) if (SECRET_PARAM.test(name)) query.set(name, 'REDACTED');
  return `${path}?${query.toString()}`;
}

/**
 * A Fastify app with the shared plugins of both gateways: request id, error envelope, 1 MB body limit, CORS,
 * zod validation, and (only when debug endpoints are enabled) the OpenAPI explorer and Prometheus metrics.
 * Routes are added by the caller inside `register` so the OpenAPI document sees them.
 */
export async function createGatewayApp(opts: GatewayAppOptions, register: (app: GatewayApp) => Promise<void> | void): Promise<GatewayApp> {
  const app = Fastify({
    loggerInstance: opts.log,
    bodyLimit: BODY_LIMIT,
    trustProxy: opts.trustProxy ?? false,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // One access line per request is written by the onResponse hook below, with the request id.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true },
    // While closing, a request that still arrives (on a kept-alive connection) gets the service's own 503 envelope
    // from the hook below instead of Fastify's body; Fastify still marks the connection to close.
    return503OnClosing: false,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  // Before the route's schema, for every route (issue 7, item 1).
  app.addHook('preValidation', rejectNulCharacters);
  // Response schemas are declared for the OpenAPI document only: actors already validated their replies against
  // the catalogue, so the gateway serializes plain JSON instead of parsing every reply a second time.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (req, reply) => {
    void reply.header('x-request-id', req.id);
    // In-flight requests finish; new ones are told to go elsewhere.
    if (closing) return sendError(opts.style, req, reply, new DomainError('unavailable', 'the server is shutting down; retry'));
  });
  app.addHook('onResponse', async (req, reply) => {
    req.log.info(
      { request_id: req.id, trace_id: traceOf(req).traceId, method: req.method, url: redactUrl(req.url, req.routeOptions.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  app.setErrorHandler((err, req, reply) => {
    const domain = toDomainError(err);
    if (domain.code === 'internal_error') req.log.error({ err, request_id: req.id, trace_id: traceOf(req).traceId }, 'unhandled error');
    return sendError(opts.style, req, reply, domain);
  });
  app.setNotFoundHandler((req, reply) => sendError(opts.style, req, reply, new DomainError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));

  const origins = opts.config.SVC_CORS_ORIGINS;
  const anyOrigin = origins.includes('*');
  await app.register(cors, {
    // `*` answers a literal `*` and never allows credentials: reflecting any origin with credentials would let every
    // site make credentialed requests. A list of origins is echoed back, with credentials.
    origin: anyOrigin ? '*' : origins.length > 0 ? origins : false,
    credentials: !anyOrigin,
    exposedHeaders: ['x-request-id', 'retry-after', 'content-disposition'],
  });

  const debug = opts.config.SVC_ENABLE_DEBUG_ENDPOINTS;
  if (debug) {
    await app.register(swagger, {
      openapi: {
        info: { title: opts.title, version: opts.version },
        components: {
          securitySchemes: {
            bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
            apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          },
        },
      },
      transform: jsonSchemaTransform,
    });
    await app.register(swaggerUi, { routePrefix: '/swagger' });
    registerMetrics(app);
  }

  await register(app);
  return app;
}

function registerMetrics(app: GatewayApp): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests', labelNames: ['method', 'route', 'status'], registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    void reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}
