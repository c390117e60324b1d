import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import type { IdentityHandler } from '../common.ts';
import { findRoleRow, out } from './role-row.ts';

export const getRole =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.roles.get'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'roles:read');
    return out(await findRoleRow(deps.orm.em.fork(), id));
  };
