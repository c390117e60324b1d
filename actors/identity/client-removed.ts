import { requirePermission } from '../../contracts/access.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import type { Handler } from '../../platform/serve.ts';
import { sql } from '../../platform/stores/sql.ts';
import type { IdentityDeps } from './deps.ts';

/**
 * `svc.identity.access.client_removed`: the fleet domain deletes a client and asks identity to drop the grants that
 * went through it (team links, direct role assignments) first, so the affected users lose that access at once
 * instead of when their cached access map expires. The fleet never reads identity's tables itself.
 */
export function clientRemovedHandler(
  deps: IdentityDeps,
): Handler<SystemCatalogue, 'svc.identity.access.client_removed'> {
  return async ({ client_id }, { ctx }) => {
    // The caller's own context travels with the nested call: only who may delete the client may drop its grants.
    requirePermission(ctx, 'clients:delete', client_id);
    const users = await deps.orm.em.fork().transactional(async (tx) => {
      // Whose access goes through this client, read in the transaction that removes the links.
      const rows = await sql<{ user_id: string }>(
        tx,
        `SELECT tm.user_id FROM team_members tm JOIN team_clients tc ON tc.team_id = tm.team_id WHERE tc.client_id = ?
         UNION SELECT user_id FROM user_client_roles WHERE client_id = ?`,
        [client_id, client_id],
      );
      await sql(tx, `DELETE FROM team_clients WHERE client_id = ?`, [client_id]);
      await sql(tx, `DELETE FROM user_client_roles WHERE client_id = ?`, [client_id]);
      return rows.map((r) => r.user_id);
    });
    // After the commit, so no resolution can cache the old access in between (the resolver deletes twice).
    await deps.access.invalidateUsers(users);
    return { affected_users: users.length };
  };
}
