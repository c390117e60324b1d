import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { requireOnEvery, sql, type IdentityHandler } from '../common.ts';
import { recordServiceAccount } from './audit.ts';
import { findSa } from './sa-row.ts';
import { scopeOf } from './scope.ts';

export const deleteServiceAccount =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.service_accounts.delete'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'users:delete');
    const removed = await deps.orm.em.fork().transactional(async (tx) => {
      const sa = await findSa(tx, id, true);
      requireOnEvery(ctx, 'users:delete', scopeOf(sa.client_scope), 'this service account');
      await sql(tx, `DELETE FROM service_accounts WHERE id = ?`, [id]);
      return sa;
    });
    await deps.access.invalidateApiKeys([removed.api_key_hash]);
    await recordServiceAccount(deps, ctx, 'service_account.deleted', id, [removed.client_scope], {
      name: removed.name,
      api_key_prefix: removed.api_key_prefix,
    });
    return {};
  };
