import type { CallerContext } from '../../../../contracts/context.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { AuditRecorder } from '../../../../platform/audit.ts';

export type Refuse = (
  ctx: CallerContext,
  step: string,
  reason: string,
  clientId: string | undefined,
  details: Record<string, unknown>,
) => Promise<never>;

/**
 * Every refused enrolment step is audited with its reason, then answered 401 with a message that says what failed.
 * `clientId`: the client of the install token or agent named, when there is one (else the entry is global).
 */
export function refuser(audit: AuditRecorder): Refuse {
  return async (ctx, step, reason, clientId, details) => {
    await audit.record(ctx, {
      action: 'agent.enrollment_failed',
      resource_type: 'agent',
      resource_id: (details.agent_id as string | undefined) ?? null,
      client_ids: clientId === undefined ? [] : [clientId],
      details: { step, reason, ...details },
    });
    throw new DomainError('unauthorized', reason);
  };
}
