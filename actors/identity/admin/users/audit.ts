import type { CallerContext } from '../../../../contracts/context.ts';
import type { IdentityDeps } from '../../deps.ts';

/** An audit entry about a user's account. Users are global: their entries name no client (assignments name theirs). */
export const recordUser = (
  deps: IdentityDeps,
  ctx: CallerContext,
  action: string,
  userId: string,
  details: Record<string, unknown>,
): Promise<void> =>
  deps.audit.record(ctx, { action, resource_type: 'user', resource_id: userId, client_ids: [], details });

/** An audit entry about a user's direct assignment on a client: it names that client. */
export const recordAssignment = (
  deps: IdentityDeps,
  ctx: CallerContext,
  action: string,
  userId: string,
  clientId: string,
  details: Record<string, unknown>,
): Promise<void> =>
  deps.audit.record(ctx, {
    action,
    resource_type: 'user',
    resource_id: userId,
    client_ids: [clientId],
    details: { client_id: clientId, ...details },
  });
