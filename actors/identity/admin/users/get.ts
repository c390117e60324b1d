import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { requireVisibleUser, visibleClients, type IdentityHandler } from '../common.ts';
import { detail } from './detail.ts';

export const getUser =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.get'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'users:read');
    const em = deps.orm.em.fork();
    await requireVisibleUser(em, visibleClients(ctx, ['users:read']), id);
    return detail(em, ctx, id);
  };
