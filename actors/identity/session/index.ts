import type { DomainContext, DomainHandle } from '../../../platform/domain.ts';
import type { IdentityDeps } from '../deps.ts';
import { startEmailWorker } from '../email.ts';
import { login, mfaVerify } from './login.ts';
import { mfaConfirm, mfaDisable, mfaSetup } from './mfa.ts';
import { acceptInvite, changePassword, forgotPassword, resetPassword, startPasswordResetWorker } from './passwords.ts';
import { sessionServices } from './services.ts';
import { listSessions, logout, me, refresh, revokeAllSessions, revokeSession } from './tokens.ts';

/**
 * The session actor (docs/api/identity.md, the public and protected authentication routes): login and MFA, tokens and
 * sessions, passwords and invitations. Also runs the e-mail worker and the forgot-password worker.
 */
export async function startSessionActors(deps: IdentityDeps, domain: DomainContext): Promise<DomainHandle> {
  const s = sessionServices(deps);
  await domain.host.serve('identity', 'identity-session', {
    'svc.identity.auth.login': (input, { ctx }) => login(s, input, ctx),
    'svc.identity.auth.mfa_verify': (input, { ctx }) => mfaVerify(s, input, ctx),
    'svc.identity.auth.refresh': (input, { ctx }) => refresh(s, input, ctx),
    'svc.identity.auth.forgot_password': (input, { ctx }) => forgotPassword(s, input, ctx),
    'svc.identity.auth.reset_password': (input, { ctx }) => resetPassword(s, input, ctx),
    'svc.identity.auth.accept_invite': (input, { ctx }) => acceptInvite(s, input, ctx),
    'svc.identity.auth.logout': (input, { ctx }) => logout(s, input, ctx),
    'svc.identity.auth.me': (_input, { ctx }) => me(s, ctx),
    'svc.identity.auth.mfa_setup': (_input, { ctx }) => mfaSetup(s, ctx),
    'svc.identity.auth.mfa_confirm': (input, { ctx }) => mfaConfirm(s, input, ctx),
    'svc.identity.auth.mfa_disable': (input, { ctx }) => mfaDisable(s, input, ctx),
    'svc.identity.auth.change_password': (input, { ctx }) => changePassword(s, input, ctx),
    'svc.identity.auth.sessions_list': (_input, { ctx }) => listSessions(s, ctx),
    'svc.identity.auth.sessions_revoke': (input, { ctx }) => revokeSession(s, input, ctx),
    'svc.identity.auth.sessions_revoke_all': (_input, { ctx }) => revokeAllSessions(s, ctx),
  });
  const workers = [await startEmailWorker(deps), await startPasswordResetWorker(s)];
  return {
    stop: async () => {
      await Promise.all(workers.map((w) => w.stop()));
    },
  };
}
