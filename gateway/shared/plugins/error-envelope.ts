import { STATUS_CODES } from 'node:http';
import {
  apiError,
  codeForStatus,
  errorBody,
  isEnveloped,
  sendError,
  toApiError,
  type ServiceStyle,
} from '../errors.ts';
import { traceOf } from '../request-context.ts';
import { appPlugin } from './define.ts';

/** Every error leaves in the service's envelope: what a route throws, and answers ≥ 400 built elsewhere. */
export const errorEnvelope = appPlugin<{ style: ServiceStyle }>('gateway-error-envelope', async (app, { style }) => {
  // Safety net: an answer ≥ 400 that did not come from sendError (a plugin's own 400, a 405) is rewritten into the
  // envelope with the code of its status, so no error leaves either gateway in another shape.
  app.addHook('onSend', (req, reply, payload, done) => {
    if (reply.statusCode < 400 || isEnveloped(reply)) {
      done(null, payload);
      return;
    }
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
    done(null, JSON.stringify(errorBody(style, err, req.id)));
  });

  app.setErrorHandler((err, req, reply) => {
    const apiErr = toApiError(err);
    if (apiErr.code === 'internal_error')
      req.log.error({ err, request_id: req.id, trace_id: traceOf(req).traceId }, 'unhandled error');
    return sendError(style, req, reply, apiErr);
  });
});
