import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { requireVisibleUser, visibleClients, type IdentityHandler } from '../common.ts';
import { assignmentOut, assignmentsOf } from './assignments.ts';

export const listUserClients =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.clients.list'> =>
  async ({ user_id }, { ctx }) => {
    requirePermission(ctx, 'users:read');
    const em = deps.orm.em.fork();
    await requireVisibleUser(em, visibleClients(ctx, ['users:read']), user_id);
    return (await assignmentsOf(em, ctx, user_id)).map(assignmentOut);
  };
