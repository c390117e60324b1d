import {
  AcceptInviteRequest,
  ChangePasswordRequest,
  ForgotPasswordRequest,
  LoginRequest,
  LogoutRequest,
  MfaConfirmRequest,
  MfaDisableRequest,
  MfaVerifyRequest,
  RefreshRequest,
  ResetPasswordRequest,
  SessionIdRequest,
} from '../../../contracts/domains/identity-auth.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const tags = ['auth'];

/**
 * Authentication routes (docs/api/identity.md#authentication-and-caller-context): public ones count against the `auth`
 * rate class (5/min/IP by default); protected ones need a bearer token, and all but me/logout/mfa setup+confirm need
 * MFA enrolled.
 */
export function registerAuthRoutes(app: GatewayApp, deps: GatewayDeps): void {
  // ---- public, each counted against the public auth rate limit
  const open = routeGroup(app, deps, { auth: 'public', tags });
  open({
    method: 'POST',
    url: '/api/v1/auth/login',
    subject: 'svc.identity.auth.login',
    rate: 'auth',
    body: LoginRequest,
    input: ({ body }) => body,
    // 202 with the challenge when MFA is enabled, 200 with tokens otherwise.
    send: (data, reply) => reply.status('mfa_required' in data ? 202 : 200).send({ data }),
  });
  open({
    method: 'POST',
    url: '/api/v1/auth/mfa/verify',
    subject: 'svc.identity.auth.mfa_verify',
    rate: 'auth',
    body: MfaVerifyRequest,
    input: ({ body }) => body,
  });
  open({
    method: 'POST',
    url: '/api/v1/auth/refresh',
    subject: 'svc.identity.auth.refresh',
    rate: 'auth',
    body: RefreshRequest,
    input: ({ body }) => body,
  });
  open({
    method: 'POST',
    url: '/api/v1/auth/forgot-password',
    subject: 'svc.identity.auth.forgot_password',
    rate: 'auth',
    body: ForgotPasswordRequest,
    input: ({ body }) => body,
  });
  open({
    method: 'POST',
    url: '/api/v1/auth/reset-password',
    subject: 'svc.identity.auth.reset_password',
    rate: 'auth',
    body: ResetPasswordRequest,
    input: ({ body }) => body,
  });
  open({
    method: 'POST',
    url: '/api/v1/auth/accept-invite',
    subject: 'svc.identity.auth.accept_invite',
    rate: 'auth',
    body: AcceptInviteRequest,
    input: ({ body }) => body,
  });

  // ---- signed in, MFA not yet required (enrolment and leaving)
  const enrolling = routeGroup(app, deps, { auth: 'enrolment', tags });
  enrolling({
    method: 'POST',
    url: '/api/v1/auth/logout',
    subject: 'svc.identity.auth.logout',
    body: LogoutRequest,
    input: ({ body }) => body,
  });
  enrolling({ method: 'GET', url: '/api/v1/auth/me', subject: 'svc.identity.auth.me', input: () => ({}) });
  enrolling({
    method: 'POST',
    url: '/api/v1/auth/mfa/setup',
    subject: 'svc.identity.auth.mfa_setup',
    input: () => ({}),
  });
  enrolling({
    method: 'POST',
    url: '/api/v1/auth/mfa/confirm',
    subject: 'svc.identity.auth.mfa_confirm',
    body: MfaConfirmRequest,
    input: ({ body }) => body,
  });

  // ---- signed in with MFA
  const signedIn = routeGroup(app, deps, { auth: 'user', tags });
  signedIn({
    method: 'DELETE',
    url: '/api/v1/auth/mfa',
    subject: 'svc.identity.auth.mfa_disable',
    body: MfaDisableRequest,
    input: ({ body }) => body,
  });
  signedIn({
    method: 'PUT',
    url: '/api/v1/auth/password',
    subject: 'svc.identity.auth.change_password',
    body: ChangePasswordRequest,
    input: ({ body }) => body,
  });
  signedIn({
    method: 'GET',
    url: '/api/v1/auth/sessions',
    subject: 'svc.identity.auth.sessions_list',
    input: () => ({}),
  });
  signedIn({
    method: 'DELETE',
    url: '/api/v1/auth/sessions/:id',
    subject: 'svc.identity.auth.sessions_revoke',
    params: SessionIdRequest,
    input: ({ params }) => params,
  });
  signedIn({
    method: 'DELETE',
    url: '/api/v1/auth/sessions',
    subject: 'svc.identity.auth.sessions_revoke_all',
    input: () => ({}),
  });
}
