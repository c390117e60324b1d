import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DomainError, type ErrorCode } from '../../contracts/errors.ts';

export type ServiceStyle = 'console' | 'invoicing';

export const statusOf: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  mfa_enrollment_required: 403,
  not_found: 404,
  conflict: 409,
  request_too_large: 413,
  too_many_requests: 429,
  internal_error: 500,
  unavailable: 503,
  timeout: 504,
};

/** Console codes are the spec's lower-case words; 429/503/504 get words of the same style. */
const consoleCodes: Record<ErrorCode, string> = {
  bad_request: 'bad_request',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  mfa_enrollment_required: 'mfa_enrollment_required',
  not_found: 'not_found',
  conflict: 'conflict',
  request_too_large: 'request_too_large',
  too_many_requests: 'too_many_requests',
  internal_error: 'internal_error',
  unavailable: 'service_unavailable',
  timeout: 'gateway_timeout',
};

/** Invoicing codes are upper-case (invoicing.md names VALIDATION_ERROR, NOT_FOUND, CONFLICT, INTERNAL_ERROR). */
const invoicingCodes: Record<ErrorCode, string> = {
  bad_request: 'VALIDATION_ERROR',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  mfa_enrollment_required: 'MFA_ENROLLMENT_REQUIRED',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  request_too_large: 'PAYLOAD_TOO_LARGE',
  too_many_requests: 'RATE_LIMITED',
  internal_error: 'INTERNAL_ERROR',
  unavailable: 'SERVICE_UNAVAILABLE',
  timeout: 'GATEWAY_TIMEOUT',
};

export const wireCode = (style: ServiceStyle, code: ErrorCode): string => (style === 'console' ? consoleCodes : invoicingCodes)[code];

export function sendError(style: ServiceStyle, req: FastifyRequest, reply: FastifyReply, err: DomainError): FastifyReply {
  const retryAfter = err.details?.retry_after_seconds;
  if (typeof retryAfter === 'number') void reply.header('retry-after', String(Math.max(1, Math.ceil(retryAfter))));
  // Whatever an internal error said stays in the logs: the client learns only that it happened.
  const message = err.code === 'internal_error' ? 'internal error' : err.message;
  return reply.status(statusOf[err.code]).send({ error: { code: wireCode(style, err.code), message, request_id: req.id } });
}

/** Turns anything thrown in a route into the service's error envelope: never a bare 500 for bad input. */
export function toDomainError(err: unknown): DomainError {
  if (err instanceof DomainError) return err;
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
  }
  if (fe.statusCode === 413) return new DomainError('request_too_large', 'request body is larger than 1 MB');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 404) return new DomainError('not_found', fe.message ?? 'not found');
    if (fe.statusCode === 429) return new DomainError('too_many_requests', fe.message ?? 'too many requests');
    return new DomainError('bad_request', fe.message ?? 'bad request');
  }
  return new DomainError('internal_error', 'internal error');
}
