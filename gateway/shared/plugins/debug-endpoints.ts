import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { runtimeMetrics } from '../../../platform/metrics.ts';
import type { GatewayApp } from '../gateway-app.ts';
import type { ServiceStyle } from '../errors.ts';
import { shapeDocument } from '../openapi.ts';
import { appPlugin } from './define.ts';

export interface DebugEndpointsOptions {
  style: ServiceStyle;
  title: string;
  version: string;
  /** Where clients reach this service (the OpenAPI document's `servers`); unset: relative to the document. */
  publicUrl: string | undefined;
  https: boolean;
}

/** Only when debug endpoints are enabled: the OpenAPI document and explorer (/swagger), Prometheus metrics (/metrics). */
export const debugEndpoints = appPlugin<DebugEndpointsOptions>('gateway-debug-endpoints', async (app, opts) => {
  const { style, https } = opts;
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
    // Components named in the schema registry (the error envelope, recursive JSON values) are defined once.
    transformObject: (d) =>
      shapeDocument(jsonSchemaTransformObject(d) as unknown as Record<string, unknown>, {
        style,
        publicUrl: opts.publicUrl ?? '/',
      }) as unknown as ReturnType<typeof jsonSchemaTransformObject>,
  });
  // The explorer is a page with scripts: it sends its own policy (helmet's API profile would blank it).
  await app.register(swaggerUi, {
    routePrefix: '/swagger',
    staticCSP: true,
    transformStaticCSP: (csp) => (https ? csp : csp.replace(/\s*upgrade-insecure-requests;/, '')),
  });
  registerMetrics(app);
});

function registerMetrics(app: GatewayApp): void {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    done();
  });
  // The process's runtime metrics (dead letters of its consumers) beside the gateway's own.
  const served = Registry.merge([registry, runtimeMetrics]);
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    void reply.header('content-type', served.contentType);
    return served.metrics();
  });
}
