import type { FastifyRequest } from 'fastify';
import { continueTrace, formatTraceparent, type TraceContext } from '../../platform/trace.ts';

/**
 * Per-request facts every part of a gateway agrees on: the deadline (set when a bridged route is entered, so the
 * rate limiter, authentication and the call share one budget) and the trace (this gateway hop's span, continuing
 * the client's `traceparent` or starting a new trace).
 */
const deadlines = new WeakMap<FastifyRequest, number>();
const traces = new WeakMap<FastifyRequest, TraceContext>();

export function setDeadline(req: FastifyRequest, deadline: number): void {
  deadlines.set(req, deadline);
}

/** The request's deadline (epoch ms); a request that has none gets `fallbackMs` from now. */
export const deadlineOf = (req: FastifyRequest, fallbackMs: number): number =>
  deadlines.get(req) ?? Date.now() + fallbackMs;

/** This hop's trace: created on first use from the request's `traceparent` header. */
export function traceOf(req: FastifyRequest): TraceContext {
  let t = traces.get(req);
  if (!t) {
    const header = req.headers.traceparent;
    t = continueTrace(typeof header === 'string' ? header : undefined);
    traces.set(req, t);
  }
  return t;
}

/** The `traceparent` to send on: this gateway hop as the parent span. */
export const traceparentOf = (req: FastifyRequest): string => formatTraceparent(traceOf(req));
