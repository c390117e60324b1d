import { randomUUID } from 'node:crypto';
import type { FastifyServerOptions } from 'fastify';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { DomainError } from '../../../contracts/errors.ts';
import type { Logger } from '../../../platform/logger.ts';
import { errorBody, HttpError, sendError, statusOf, toApiError, type ApiError, type ServiceStyle } from '../errors.ts';
import { appPlugin } from './define.ts';
import { requestIdOf } from './request-log.ts';

/** The API profile's headers on answers written without Fastify (parser errors, CONNECT, a refused Expect). */
const RAW_SECURITY_HEADERS = 'X-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n';

/** Closing a socket with unread input resets it, and the client may lose the answer: read (and drop) for this long first. */
const LINGER_MS = 2000;

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

/**
 * The Fastify server options that answer, in the envelope, what fails before any route or hook runs: URL and route
 * failures found before routing, and requests Node's HTTP parser refused.
 */
export function earlyRefusals(
  style: ServiceStyle,
  log: Logger,
): Pick<FastifyServerOptions<Server, Logger>, 'frameworkErrors' | 'clientErrorHandler'> {
  const answeredSockets = new WeakSet<Duplex>();
  return {
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
      log.info({ request_id: id, status: statusOf[apiErr.code], err: err.code }, 'request refused by the HTTP parser');
      // Never write into a response already under way on this kept-alive connection.
      const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
      if (socket.writable && !inFlight?.headersSent) socket.end(rawErrorResponse(style, apiErr, id));
      else socket.destroy();
      // What the client is still sending is read and dropped until it closes (bounded), so the close is not a reset.
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    },
  };
}

/**
 * What HTTP allows but the gateways refuse, in the envelope instead of Node's bare answers: a request without Host,
 * an `Expect` other than 100-continue, CONNECT.
 */
export const protocolRefusals = appPlugin<{ style: ServiceStyle }>(
  'gateway-protocol-refusals',
  async (app, { style }) => {
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
    app.addHook('onRequest', (req, reply, done) => {
      // HTTP/1.1 requires Host (RFC 9112 §3.2); Node's own check is off so the refusal carries the envelope.
      if (req.headers.host === undefined && req.raw.httpVersionMajor === 1 && req.raw.httpVersionMinor >= 1)
        sendError(style, req, reply, new DomainError('bad_request', 'the Host header is required'));
      else done();
    });
  },
);
