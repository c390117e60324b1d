import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { pageOf, visibleClients, visibleServiceAccountsSql, type IdentityHandler } from '../common.ts';
import { COLUMNS, FROM, seenBy, type SaRow } from './sa-row.ts';

export const listServiceAccounts =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.service_accounts.list'> =>
  async ({ page, per_page }, { ctx }) => {
    requirePermission(ctx, 'users:read');
    const visible = visibleClients(ctx, ['users:read']);
    const filter = visibleServiceAccountsSql(visible, 'sa');
    return pageOf(
      deps.orm.em.fork(),
      {
        columns: COLUMNS,
        from: `${FROM} WHERE ${filter.where}`,
        params: filter.params,
        order: 'sa.created_at DESC, sa.id',
      },
      { page, per_page },
      (rows: SaRow[]) => rows.map((sa) => seenBy(visible, sa)),
    );
  };
