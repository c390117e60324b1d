import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { pageOf, visibleClients, visibleUsersSql, type IdentityHandler } from '../common.ts';
import { summary, USER_COLUMNS, type UserRow } from './user-row.ts';

export const listUsers =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.list'> =>
  async ({ page, per_page }, { ctx }) => {
    requirePermission(ctx, 'users:read');
    const visible = visibleUsersSql(visibleClients(ctx, ['users:read']), 'u');
    return pageOf(
      deps.orm.em.fork(),
      {
        columns: USER_COLUMNS,
        from: `users u WHERE ${visible.where}`,
        params: visible.params,
        order: 'created_at DESC, id',
      },
      { page, per_page },
      (rows: UserRow[]) => rows.map(summary),
    );
  };
