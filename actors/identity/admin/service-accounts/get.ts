import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, visibleClients, visibleServiceAccountsSql, type IdentityHandler } from '../common.ts';
import { COLUMNS, FROM, seenBy, type SaRow } from './sa-row.ts';

export const getServiceAccount =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.service_accounts.get'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'users:read');
    const visible = visibleClients(ctx, ['users:read']);
    const filter = visibleServiceAccountsSql(visible, 'sa');
    // A key out of the caller's view is not found, as if it did not exist.
    const [sa] = await sql<SaRow>(
      deps.orm.em.fork(),
      `SELECT ${COLUMNS} FROM ${FROM} WHERE sa.id = ? AND ${filter.where}`,
      [id, ...filter.params],
    );
    if (!sa) throw new DomainError('not_found', 'service account not found');
    return seenBy(visible, sa);
  };
