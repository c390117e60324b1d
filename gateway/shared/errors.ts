import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError, type ErrorCode } from '../../contracts/errors.ts';

export type ServiceStyle = 'console' | 'invoicing';

/**
 * HTTP-level failures only a gateway answers (the parser, the router, the idempotency store): no actor reports them,
 * so they are not domain codes in contracts/.
 */
export const HTTP_ERROR_CODES = [
  'method_not_allowed',
  'request_timeout',
  'uri_too_long',
  'expectation_failed',
  'unprocessable_entity',
  'request_header_fields_too_large',
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];
const isHttpErrorCode = (code: string): code is HttpErrorCode => (HTTP_ERROR_CODES as readonly string[]).includes(code);

/** Every code a gateway can answer. */
export type ApiErrorCode = ErrorCode | HttpErrorCode;

/** Thrown (or sent) by gateway code for an HTTP-level failure, like a DomainError for the codes above. */
export class HttpError extends Error {
  readonly code: HttpErrorCode;
  constructor(code: HttpErrorCode, message: string) {
    super(message);
    this.code = code;
    this.name = 'HttpError';
  }
}

/** What `sendError` answers: a domain error or a gateway-only HTTP error. */
export type ApiError = DomainError | HttpError;

/** The error of either kind for a code. */
export const apiError = (code: ApiErrorCode, message: string): ApiError =>
  isHttpErrorCode(code) ? new HttpError(code, message) : new DomainError(code, message);

export const statusOf: Record<ApiErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  mfa_enrollment_required: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  request_too_large: 413,
  uri_too_long: 414,
  expectation_failed: 417,
  unprocessable_entity: 422,
  too_many_requests: 429,
  request_header_fields_too_large: 431,
  internal_error: 500,
  bad_gateway: 502,
  unavailable: 503,
  timeout: 504,
};

/** Console codes are lower-case words (docs/api/conventions.md); the others get words of that style (the HTTP reason). */
const consoleCodes: Record<ApiErrorCode, string> = {
  bad_request: 'bad_request',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  mfa_enrollment_required: 'mfa_enrollment_required',
  not_found: 'not_found',
  method_not_allowed: 'method_not_allowed',
  request_timeout: 'request_timeout',
  conflict: 'conflict',
  request_too_large: 'request_too_large',
  uri_too_long: 'uri_too_long',
  expectation_failed: 'expectation_failed',
  unprocessable_entity: 'unprocessable_entity',
  too_many_requests: 'too_many_requests',
  request_header_fields_too_large: 'request_header_fields_too_large',
  internal_error: 'internal_error',
  bad_gateway: 'bad_gateway',
  unavailable: 'service_unavailable',
  timeout: 'gateway_timeout',
};

/** Invoicing codes are upper-case: VALIDATION_ERROR, NOT_FOUND, CONFLICT, INTERNAL_ERROR… (docs/api/conventions.md). */
const invoicingCodes: Record<ApiErrorCode, string> = {
  bad_request: 'VALIDATION_ERROR',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  mfa_enrollment_required: 'MFA_ENROLLMENT_REQUIRED',
  not_found: 'NOT_FOUND',
  method_not_allowed: 'METHOD_NOT_ALLOWED',
  request_timeout: 'REQUEST_TIMEOUT',
  conflict: 'CONFLICT',
  request_too_large: 'PAYLOAD_TOO_LARGE',
  uri_too_long: 'URI_TOO_LONG',
  expectation_failed: 'EXPECTATION_FAILED',
  unprocessable_entity: 'UNPROCESSABLE_ENTITY',
  too_many_requests: 'RATE_LIMITED',
  request_header_fields_too_large: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  internal_error: 'INTERNAL_ERROR',
  bad_gateway: 'BAD_GATEWAY',
  unavailable: 'SERVICE_UNAVAILABLE',
  timeout: 'GATEWAY_TIMEOUT',
};

export const wireCode = (style: ServiceStyle, code: ApiErrorCode): string =>
  (style === 'console' ? consoleCodes : invoicingCodes)[code];

/** The envelope of an error: `{error:{code,message,request_id}}` with the service's code spelling. */
export function errorBody(
  style: ServiceStyle,
  err: ApiError,
  requestId: string,
): { error: { code: string; message: string; request_id: string } } {
  // Whatever an internal error said stays in the logs: the client learns only that it happened.
  const message = err.code === 'internal_error' ? 'internal error' : err.message;
  return { error: { code: wireCode(style, err.code), message, request_id: requestId } };
}

/** Replies sent through `sendError`: anything else ≥ 400 is rewrapped by the safety net in app.ts. */
const enveloped = new WeakSet<FastifyReply>();
export const isEnveloped = (reply: FastifyReply): boolean => enveloped.has(reply);
/** For the rare answer ≥ 400 whose body a document fixes otherwise (the readiness probes' 503): sent as is. */
export const keepErrorBody = (reply: FastifyReply): FastifyReply => {
  enveloped.add(reply);
  return reply;
};

export function sendError(style: ServiceStyle, req: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  const retryAfter = err instanceof DomainError ? err.details?.retry_after_seconds : undefined;
  if (typeof retryAfter === 'number') void reply.header('retry-after', String(Math.max(1, Math.ceil(retryAfter))));
  enveloped.add(reply);
  // Frameworks errors (bad URL, over-long parameter) never ran the onRequest hook that sets it.
  void reply.header('x-request-id', req.id);
  return reply.status(statusOf[err.code]).send(errorBody(style, err, req.id));
}

/** The code of an answer a gateway did not build itself (a plugin's 400, a 405): by its status. */
export function codeForStatus(status: number): ApiErrorCode {
  const known = (Object.keys(statusOf) as ApiErrorCode[]).find(
    (code) => statusOf[code] === status && code !== 'mfa_enrollment_required',
  );
  if (known) return known;
  return status >= 500 ? 'internal_error' : 'bad_request';
}

/** Turns anything thrown in a route into the service's error envelope: never a bare 500 for bad input. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof DomainError || err instanceof HttpError) return err;
  if (hasZodFastifySchemaValidationErrors(err)) {
    const where = err.validationContext ?? 'request';
    const message = err.validation
      .slice(0, 5)
      .map((v) => {
        const path = v.instancePath.replace(/^\//, '').replaceAll('/', '.');
        return `${path ? `${where}.${path}` : where}: ${v.message}`;
      })
      .join('; ');
    return new DomainError('bad_request', message);
  }
  const fe = err as Partial<FastifyError>;
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DomainError('request_too_large', 'request body is larger than 1 MB');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new DomainError('bad_request', `malformed JSON body: ${fe.message ?? ''}`.trim());
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DomainError('bad_request', 'body must not be empty when Content-Type is application/json');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new DomainError('bad_request', 'unsupported Content-Type; send application/json');
    case 'FST_ERR_BAD_URL':
      return new DomainError('bad_request', 'malformed URL: invalid percent-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new HttpError('uri_too_long', 'a path parameter is longer than 100 characters');
  }
  if (fe.statusCode === 413) return new DomainError('request_too_large', 'request body is larger than 1 MB');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return apiError(codeForStatus(fe.statusCode), fe.message || 'request refused');
  }
  return new DomainError('internal_error', 'internal error');
}
