import { z } from 'zod';
import { CallerContext } from './context.ts';
import { ErrorBody } from './errors.ts';

/** What travels on a request subject. `input` is parsed against the subject's schema by the actor. */
export const RequestEnvelope = z.object({ ctx: CallerContext, input: z.unknown() });
export type RequestEnvelope = z.infer<typeof RequestEnvelope>;

export const ReplyEnvelope = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), data: z.unknown() }),
  z.object({ ok: z.literal(false), error: ErrorBody }),
]);
export type ReplyEnvelope = z.infer<typeof ReplyEnvelope>;

/** NATS header names the runtime carries across every hop. */
export const Headers = {
  requestId: 'Svc-Request-Id',
  deadline: 'Svc-Deadline',
  traceparent: 'traceparent',
} as const;
