import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { Registry, Counter, Histogram, collectDefaultMetrics } from 'prom-client';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { runtimeMetrics } from '../../platform/metrics.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { BrokerBreaker } from './broker-breaker.ts';
import {
  apiError,
  codeForStatus,
  errorBody,
  HttpError,
  isEnveloped,
  sendError,
  statusOf,
  toApiError,
  type ApiError,
  type ServiceStyle,
} from './errors.ts';
import { shapeDocument } from './openapi.ts';
import { traceOf } from './request-context.ts';
import { rejectUnstorableStrings } from './validation.ts';

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
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `X-Request-Id` when well-formed, otherwise a new UUID. */
function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The API profile's headers on answers written without Fastify (parser errors, CONNECT, a refused Expect). */
const RAW_SECURITY_HEADERS = 'X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n';

/** A whole HTTP/1.1 error response, for sockets no ServerResponse exists for (parser errors, CONNECT). */
function rawErrorResponse(style: ServiceStyle, err: ApiError, requestId: string): string {
  const status = statusOf[err.code];
  const body = JSON.stringify(errorBody(style, err, requestId));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n${RAW_SECURITY_HEADERS}Connection: close\r\n\r\n${body}`
  );
}

/** What Node's HTTP parser refused, as the envelope's error. */
function parserError(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new HttpError('request_header_fields_too_large', 'request headers or URL larger than 16 KB');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return new HttpError('request_timeout', 'the request was not received in time');
    case 'HPE_INVALID_METHOD':
      return new DomainError('bad_request', 'unknown HTTP method');
    default:
      return new DomainError('bad_request', 'malformed HTTP request');
  }
}

/** Closing a socket with unread input resets it, and the client may lose the answer: read (and drop) for this long first. */
const LINGER_MS = 2000;

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
    const secret = (name: string | undefined): boolean =>
      name !== undefined && name.startsWith(':') && SECRET_PARAM.test(name.slice(1));
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
export async function createGatewayApp(
  opts: GatewayAppOptions,
  register: (app: GatewayApp) => Promise<void> | void,
): Promise<GatewayApp> {
  const style = opts.style;
  const answeredSockets = new WeakSet<Duplex>();
  const app = Fastify({
    loggerInstance: opts.log,
    bodyLimit: BODY_LIMIT,
    trustProxy: opts.trustProxy ?? false,
    requestIdHeader: false,
    genReqId: (req) => requestIdOf(req.headers),
    // A missing Host is refused by the onRequest hook below, in the envelope, instead of Node's bare 400.
    http: { requireHostHeader: false },
    // URL and route failures found before routing (bad percent-encoding, over-long parameter) answer the envelope.
    frameworkErrors: (err, req, reply) => {
      req.log.info(
        { request_id: req.id, method: req.method, status: err.statusCode, err: err.code },
        'request refused before routing',
      );
      void sendError(style, req, reply, toApiError(err));
    },
    // Node's HTTP parser refused the request (headers or URL over 16 KB, unknown method, malformed syntax): no
    // request object exists, so the envelope is written on the socket with a generated request id.
    clientErrorHandler: (err, socket) => {
      if (err.code === 'ECONNRESET' || socket.destroyed || answeredSockets.has(socket)) return;
      // The parser keeps failing on whatever else arrives on this socket: answer once.
      answeredSockets.add(socket);
      const apiErr = parserError(err.code);
      const id = randomUUID();
      opts.log.info(
        { request_id: id, status: statusOf[apiErr.code], err: err.code },
        'request refused by the HTTP parser',
      );
      // Never write into a response already under way on this kept-alive connection.
      const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (socket.writable && !inFlight?.headersSent) socket.end(rawErrorResponse(style, apiErr, id));
      else socket.destroy();
      // What the client is still sending is read and dropped until it closes (bounded), so the close is not a reset.
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    },
    // One access line per request is written by the onResponse hook below, with the request id.
    logController: new LogController({ disableRequestLogging: true }),
    // A path parameter longer than maxParamLength is refused with 414 (frameworkErrors above) before any route runs.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 100 },
    // While closing, a request that still arrives (on a kept-alive connection) gets the service's own 503 envelope
    // from the hook below instead of Fastify's body; Fastify still marks the connection to close.
    return503OnClosing: false,
  }).withTypeProvider<ZodTypeProvider>();

  // `Expect` other than 100-continue: Node would answer a bare 417.
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const id = requestIdOf(req.headers);
    const body = JSON.stringify(
      errorBody(style, new HttpError('expectation_failed', 'only Expect: 100-continue is supported'), id),
    );
    res.writeHead(statusOf.expectation_failed, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': id,
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
      connection: 'close',
    });
    res.end(body);
  });
  // CONNECT (a proxy tunnel) never reaches Fastify: Node would drop the connection without a word.
  app.server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined);
    socket.end(
      rawErrorResponse(
        style,
        new HttpError('method_not_allowed', 'CONNECT is not supported'),
        requestIdOf(req.headers),
      ),
    );
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  });

  // Security headers, an API profile (issue 25, item 9), on every answer including errors: registered before the
  // hooks below so an early refusal (missing Host, shutting down) carries them too.
  const https = opts.publicUrl?.startsWith('https:') === true;
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

  app.setValidatorCompiler(validatorCompiler);
  // Before the route's schema, for every route (issue 7, item 1; issue 25, item 12).
  app.addHook('preValidation', rejectUnstorableStrings);
  // Response schemas are declared for the OpenAPI document only: actors already validated their replies against
  // the catalogue, so the gateway serializes plain JSON instead of parsing every reply a second time.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // Open connections, so a close can wait for kept-alive ones to be used or go quiet before they are cut.
  const connections = new Set<Duplex>();
  app.server.on('connection', (socket: Duplex) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  const drainMs = opts.drainMs ?? 1000;

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
    // A request in flight finishes and leaves its connection kept alive (a request already pipelined behind it still
    // gets its 503): that connection must not hold close() for the usual keep-alive timeout (72 s).
    app.server.keepAliveTimeout = drainMs;
    // Node's server.close() (run by Fastify right after this hook) destroys every connection that is idle between
    // requests at once, including one whose next request has already arrived but is not yet read: the client sees a
    // reset and never learns whether its request ran. Instead, give open connections a short window: a request that
    // arrives meanwhile is answered 503 with `Connection: close` (the hook below), which ends its connection cleanly;
    // only connections still silent after the window are cut.
    const until = Date.now() + drainMs;
    while (app.server.listening && connections.size > 0 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 10));
  });
  app.addHook('onRequest', async (req, reply) => {
    void reply.header('x-request-id', req.id);
    // In-flight requests finish; new ones are told to go elsewhere.
    if (closing)
      return sendError(style, req, reply, new DomainError('unavailable', 'the server is shutting down; retry'));
    // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own check is off so the refusal carries the envelope.
    if (req.headers.host === undefined && req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor >= 1) {
      return sendError(style, req, reply, new DomainError('bad_request', 'the Host header is required'));
    }
  });
  // Safety net: an answer ≥ 400 that did not come from sendError (a plugin's own 400, a 405) is rewritten into the
  // envelope with the code of its status, so no error leaves either gateway in another shape.
  app.addHook('onSend', async (req, reply, payload) => {
    if (reply.statusCode < 400 || isEnveloped(reply)) return payload;
    if (
      payload !== null &&
      typeof payload === 'object' &&
      'destroy' in payload &&
      typeof payload.destroy === 'function'
    )
      payload.destroy();
    const text =
      typeof payload === 'string' && payload.length > 0 && payload.length <= 200 && !payload.startsWith('{')
        ? payload
        : undefined;
    const err = apiError(codeForStatus(reply.statusCode), text ?? STATUS_CODES[reply.statusCode] ?? 'request refused');
    reply.removeHeader('content-length');
    void reply.header('content-type', 'application/json; charset=utf-8');
    return JSON.stringify(errorBody(style, err, req.id));
  });
  app.addHook('onResponse', async (req, reply) => {
    req.log.info(
      {
        request_id: req.id,
        trace_id: traceOf(req).traceId,
        method: req.method,
        url: redactUrl(req.url, req.routeOptions.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
  });

  app.setErrorHandler((err, req, reply) => {
    const apiErr = toApiError(err);
    if (apiErr.code === 'internal_error')
      req.log.error({ err, request_id: req.id, trace_id: traceOf(req).traceId }, 'unhandled error');
    return sendError(style, req, reply, apiErr);
  });
  app.setNotFoundHandler((req, reply) =>
    sendError(style, req, reply, new DomainError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)),
  );

  const origins = opts.config.SVC_CORS_ORIGINS;
  const anyOrigin = origins.includes('*');
  await app.register(cors, {
    // `*` answers a literal `*` and never allows credentials: reflecting any origin with credentials would let every
    // site make credentialed requests. A list of origins is echoed back, with credentials.
    origin: anyOrigin ? '*' : origins.length > 0 ? origins : false,
    credentials: !anyOrigin,
    exposedHeaders: ['x-request-id', 'retry-after', 'content-disposition', 'idempotent-replayed'],
  });
  // After CORS's own hook, so a preflight is still answered and the 503 carries the CORS headers a browser needs to
  // read it. Probes, metrics and the explorer never need the broker and stay outside /api/.
  const breaker = opts.breaker;
  if (breaker) {
    app.addHook('onRequest', async (req, reply) => {
      if (!req.url.startsWith('/api/')) return;
      const refused = breaker.refusal();
      if (refused) return sendError(style, req, reply, refused);
    });
  }

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
  }

  await register(app);
  return app;
}

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
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });
  // The process's runtime metrics (dead letters of its consumers) beside the gateway's own.
  const served = Registry.merge([registry, runtimeMetrics]);
  app.get('/metrics', { schema: { hide: true } }, async (_req, reply) => {
    void reply.header('content-type', served.contentType);
    return served.metrics();
  });
}
