import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import type { IdentityHandler } from '../common.ts';
import { recordUser } from './audit.ts';
import { mailToken } from './mail-token.ts';

export const resendInvite =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.resend_invite'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'users:write');
    const user = await mailToken(deps, ctx, id, 'invite');
    await recordUser(deps, ctx, 'user.invite_resent', id, { email: user.email });
    return { message: 'invitation sent' };
  };
