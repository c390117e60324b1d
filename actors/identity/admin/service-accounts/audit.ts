import type { CallerContext } from '../../../../contracts/context.ts';
import type { IdentityDeps } from '../../deps.ts';

/**
 * An audit entry about a service account. A key concerns the clients of its scope (`scopes`: the stored scopes the
 * entry is about, such as the one a key had and the one it has now); `*` in any of them: every client, a global entry.
 */
export const recordServiceAccount = (
  deps: IdentityDeps,
  ctx: CallerContext,
  action: string,
  id: string,
  scopes: readonly (readonly string[])[],
  details: Record<string, unknown>,
): Promise<void> =>
  deps.audit.record(ctx, {
    action,
    resource_type: 'service_account',
    resource_id: id,
    client_ids: scopes.some((s) => s.includes('*')) ? [] : scopes.flat(),
    details,
  });
