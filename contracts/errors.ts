import { z } from 'zod';

/** Domain error codes carried in reply envelopes. Gateways map them to HTTP statuses and each service's code spelling. */
export const ErrorCode = z.enum([
  'bad_request',
  'unauthorized',
  'forbidden',
  'mfa_enrollment_required',
  'not_found',
  'conflict',
  'request_too_large',
  'too_many_requests',
  'internal_error',
  'unavailable',
  'timeout',
  /** An upstream system (the issue tracker, the metrics store) failed or answered something unusable. */
  'bad_gateway',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorBody = z.object({
  code: ErrorCode,
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Thrown by actors (and by callers on an error reply); the runtime turns it into `{ ok: false, error }`. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.details = details;
  }
  toBody(): ErrorBody {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}

/** "body.email: Invalid email address; body.password: Too small" — names each failing field and why. */
export function describeZodError(error: z.ZodError, root?: string): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].filter((p) => p !== undefined && p !== '').join('.');
      return path ? `${path}: ${issue.message}` : issue.message;
    })
    .join('; ');
}
