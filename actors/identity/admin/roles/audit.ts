import type { CallerContext } from '../../../../contracts/context.ts';
import type { IdentityDeps } from '../../deps.ts';

/** An audit entry about a role. Roles are global (granted on any client): their entries name none. */
export const recordRole = (
  deps: IdentityDeps,
  ctx: CallerContext,
  action: string,
  roleId: string,
  details: Record<string, unknown>,
): Promise<void> =>
  deps.audit.record(ctx, { action, resource_type: 'role', resource_id: roleId, client_ids: [], details });
