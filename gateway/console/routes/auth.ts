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
import { bridge, type GatewayDeps } from '../../shared/bridge.ts';

const tags = ['auth'];

/**
 * Authentication routes (console-identity.md): public ones count against the `auth` rate class (5/min/IP by
 * default); protected ones need a bearer token, and all but me/logout/mfa setup+confirm need MFA enrolled.
 */
export function registerAuthRoutes(app: GatewayApp, deps: GatewayDeps): void {
  // ---- public
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/auth/login',
    subject: 'svc.identity.auth.login',
    auth: 'public',
    rate: 'auth',
    tags,
    body: LoginRequest,
    input: ({ body }) => body,
    // 202 with the challenge when MFA is enabled, 200 with tokens otherwise.
    send: (data, reply) => reply.status('mfa_required' in data ? 202 : 200).send({ data }),
  });
  bridge(app, deps, { method: 'POST', url: '/api/v1/auth/mfa/verify', subject: 'svc.identity.auth.mfa_verify', auth: 'public', rate: 'auth', tags, body: MfaVerifyRequest, input: ({ body }) => body });
  bridge(app, deps, { method: 'POST', url: '/api/v1/auth/refresh', subject: 'svc.identity.auth.refresh', auth: 'public', rate: 'auth', tags, body: RefreshRequest, input: ({ body }) => body });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/auth/forgot-password',
    subject: 'svc.identity.auth.forgot_password',
    auth: 'public',
    rate: 'auth',
    tags,
    body: ForgotPasswordRequest,
    input: ({ body }) => body,
  });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/auth/reset-password',
    subject: 'svc.identity.auth.reset_password',
    auth: 'public',
    rate: 'auth',
    tags,
    body: ResetPasswordRequest,
    input: ({ body }) => body,
  });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/auth/accept-invite',
    subject: 'svc.identity.auth.accept_invite',
    auth: 'public',
    rate: 'auth',
    tags,
    body: AcceptInviteRequest,
    input: ({ body }) => body,
  });

  // ---- signed in, MFA not yet required (enrolment and leaving)
  bridge(app, deps, { method: 'POST', url: '/api/v1/auth/logout', subject: 'svc.identity.auth.logout', auth: 'enrolment', tags, body: LogoutRequest, input: ({ body }) => body });
  bridge(app, deps, { method: 'GET', url: '/api/v1/auth/me', subject: 'svc.identity.auth.me', auth: 'enrolment', tags, input: () => ({}) });
  bridge(app, deps, { method: 'POST', url: '/api/v1/auth/mfa/setup', subject: 'svc.identity.auth.mfa_setup', auth: 'enrolment', tags, input: () => ({}) });
  bridge(app, deps, { method: 'POST', url: '/api/v1/auth/mfa/confirm', subject: 'svc.identity.auth.mfa_confirm', auth: 'enrolment', tags, body: MfaConfirmRequest, input: ({ body }) => body });

  // ---- signed in with MFA
  bridge(app, deps, { method: 'DELETE', url: '/api/v1/auth/mfa', subject: 'svc.identity.auth.mfa_disable', auth: 'user', tags, body: MfaDisableRequest, input: ({ body }) => body });
  bridge(app, deps, { method: 'PUT', url: '/api/v1/auth/password', subject: 'svc.identity.auth.change_password', auth: 'user', tags, body: ChangePasswordRequest, input: ({ body }) => body });
  bridge(app, deps, { method: 'GET', url: '/api/v1/auth/sessions', subject: 'svc.identity.auth.sessions_list', auth: 'user', tags, input: () => ({}) });
  bridge(app, deps, {
    method: 'DELETE',
    url: '/api/v1/auth/sessions/:id',
    subject: 'svc.identity.auth.sessions_revoke',
    auth: 'user',
    tags,
    params: SessionIdRequest,
    input: ({ params }) => params,
  });
  bridge(app, deps, { method: 'DELETE', url: '/api/v1/auth/sessions', subject: 'svc.identity.auth.sessions_revoke_all', auth: 'user', tags, input: () => ({}) });
}
