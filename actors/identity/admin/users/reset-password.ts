import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { emailSenderConfigured } from '../../email.ts';
import type { IdentityHandler } from '../common.ts';
import { recordUser } from './audit.ts';
import { mailToken } from './mail-token.ts';

export const resetPassword =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.users.reset_password'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'users:write');
    if (!emailSenderConfigured(deps.config))
      throw new DomainError(
        'conflict',
        'no e-mail sender is configured (set SVC_SMTP_HOST, or SVC_EMAIL_PROVIDER=resend with SVC_RESEND_API_KEY)',
      );
    const user = await mailToken(deps, ctx, id, 'reset');
    await recordUser(deps, ctx, 'user.password_reset_requested', id, { email: user.email });
    return { message: 'password reset e-mail sent' };
  };
