import { DomainError } from '../../../../contracts/errors.ts';
import { ALL_PERMISSIONS } from '../../permissions.ts';
import type { IdentityHandler } from '../common.ts';

/** The permission registry, for any signed-in caller. */
export const listPermissions =
  (): IdentityHandler<'svc.identity.permissions.list'> =>
  async (_input, { ctx }) => {
    if (ctx.principal.kind === 'anonymous') throw new DomainError('unauthorized', 'missing credentials');
    return [...ALL_PERMISSIONS];
  };
