import { z } from 'zod';
import { ClientAccessMap } from '../context.ts';
import { EmailLookup } from '../fields.ts';
import { subjects } from '../subject.ts';

/**
 * The session actor's subjects (docs/api/identity.md, the public and protected authentication routes): sign-in, MFA,
 * tokens and sessions, passwords, invitations.
 */

const iso = z.iso.datetime({ offset: true });

/** Passwords are bounded so a megabyte "password" cannot tie up the hasher; the policy itself is checked by the actor. */
const Password = z.string().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters');
/** Reset, invitation and refresh tokens: 32 bytes base64url (43 characters); a little slack, no more. */
const OpaqueToken = z.string().min(1, 'must not be empty').max(256, 'is too long');

/** Token response of login, MFA verify, refresh, accept-invite and the SSO exchange. */
export const TokenResponse = z.object({
  access_token: z.string(),
  refresh_token: z.string(),
  session_id: z.uuid(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int().positive(),
});
export type TokenResponse = z.infer<typeof TokenResponse>;

/** The 202 answer of a login whose user has MFA enabled. */
export const MfaChallenge = z.object({
  mfa_required: z.literal(true),
  mfa_token: z.uuid(),
});
export type MfaChallenge = z.infer<typeof MfaChallenge>;

export const SessionView = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  ip_address: z.string().nullable(),
  user_agent: z.string().nullable(),
  device_label: z.string().nullable(),
  is_revoked: z.boolean(),
  /** The session the request was made with. */
  is_current: z.boolean(),
  last_active_at: iso,
  expires_at: iso,
  created_at: iso,
});
export type SessionView = z.infer<typeof SessionView>;

export const MeView = z.object({
  user: z.object({
    id: z.uuid(),
    email: z.string(),
    display_name: z.string(),
    mfa_enabled: z.boolean(),
    status: z.enum(['invited', 'active', 'disabled']),
    /** Super admins see every client and pass every check; their client_access map is empty. */
    is_super_admin: z.boolean(),
  }),
  client_access: ClientAccessMap,
});
export type MeView = z.infer<typeof MeView>;

const Message = z.object({ message: z.string() });

export const LoginRequest = z.object({
  email: z.string().min(1, 'must not be empty').max(320, 'is too long'),
  password: Password,
});
export const MfaVerifyRequest = z.object({
  mfa_token: z.string().min(1, 'must not be empty').max(64, 'is too long'),
  code: z.string().min(1, 'must not be empty').max(32, 'is too long'),
});
export const RefreshRequest = z.object({ refresh_token: OpaqueToken });
export const ForgotPasswordRequest = z.object({ email: EmailLookup });
export const ResetPasswordRequest = z.object({ token: OpaqueToken, new_password: Password });
export const AcceptInviteRequest = z.object({ token: OpaqueToken, password: Password });
export const LogoutRequest = z.object({ refresh_token: OpaqueToken });
export const MfaConfirmRequest = z.object({ code: z.string().regex(/^\d{6}$/, 'must be a 6-digit code') });
export const MfaDisableRequest = z.object({ password: Password });
export const ChangePasswordRequest = z.object({ current_password: Password, new_password: Password });
export const SessionIdRequest = z.object({ id: z.uuid() });

export const FORGOT_PASSWORD_MESSAGE = 'If an account exists for that e-mail, a reset link has been sent.';

export const identityAuthSubjects = subjects({
  'svc.identity.auth.login': {
    summary: 'Signs in with e-mail and password: a token response, or an MFA challenge when MFA is enabled.',
    request: LoginRequest,
    reply: z.union([TokenResponse, MfaChallenge]),
    errors: ['unauthorized', 'too_many_requests'],
  },
  'svc.identity.auth.mfa_verify': {
    summary: 'Completes a login with a TOTP code or a recovery code.',
    request: MfaVerifyRequest,
    reply: TokenResponse,
    errors: ['unauthorized', 'too_many_requests'],
  },
  'svc.identity.auth.refresh': {
    summary:
      'Rotates a refresh token: new access token and refresh token; a rotated token presented again revokes its session.',
    request: RefreshRequest,
    reply: TokenResponse,
    errors: ['unauthorized'],
  },
  'svc.identity.auth.forgot_password': {
    summary: 'Sends a password-reset link when the account exists; the same answer either way.',
    request: ForgotPasswordRequest,
    reply: Message,
    errors: [],
    produces: { 'svc.work.identity.password_reset': { email: 'email' } },
  },
  'svc.identity.auth.reset_password': {
    summary: 'Sets a new password with a reset token, revokes every session of the user and mails them a notice.',
    request: ResetPasswordRequest,
    reply: Message,
    errors: ['bad_request'],
    produces: { 'svc.work.email.send': {} },
  },
  'svc.identity.auth.accept_invite': {
    summary: 'Activates an invited user with an invitation token, sets the password and signs in.',
    request: AcceptInviteRequest,
    reply: TokenResponse,
    errors: ['bad_request'],
  },
  'svc.identity.auth.logout': {
    summary: "Revokes the session of a refresh token, when it is one of the caller's sessions.",
    request: LogoutRequest,
    reply: Message,
    errors: ['unauthorized'],
  },
  'svc.identity.auth.me': {
    retry: 'safe',
    summary: 'The signed-in user and their client access map.',
    request: z.object({}),
    reply: MeView,
    errors: ['unauthorized'],
  },
  'svc.identity.auth.mfa_setup': {
    summary: 'Starts MFA enrolment: a new TOTP secret (pending 10 minutes) and 8 recovery codes, shown once.',
    request: z.object({}),
    reply: z.object({ secret: z.string(), qr_code_uri: z.string(), recovery_codes: z.array(z.string()).length(8) }),
    errors: ['conflict'],
  },
  'svc.identity.auth.mfa_confirm': {
    summary: 'Enables MFA with a code from the pending secret.',
    request: MfaConfirmRequest,
    reply: z.object({ mfa_enabled: z.literal(true) }),
    errors: ['bad_request', 'conflict'],
  },
  'svc.identity.auth.mfa_disable': {
    summary: 'Removes the MFA secret and recovery codes after checking the password.',
    request: MfaDisableRequest,
    reply: z.object({ mfa_enabled: z.literal(false) }),
    errors: ['bad_request', 'too_many_requests'],
  },
  'svc.identity.auth.change_password': {
    summary: 'Changes the password of the signed-in user (policy and history checks apply) and mails them a notice.',
    request: ChangePasswordRequest,
    reply: Message,
    errors: ['bad_request', 'too_many_requests'],
    produces: { 'svc.work.email.send': {} },
  },
  'svc.identity.auth.sessions_list': {
    retry: 'safe',
    summary: "The caller's sessions that are neither revoked nor expired, most recently active first.",
    request: z.object({}),
    reply: z.array(SessionView),
    errors: [],
  },
  'svc.identity.auth.sessions_revoke': {
    summary: "Revokes one of the caller's own sessions.",
    request: SessionIdRequest,
    reply: Message,
    errors: ['not_found'],
  },
  'svc.identity.auth.sessions_revoke_all': {
    summary: "Revokes all of the caller's sessions.",
    request: z.object({}),
    reply: z.object({ message: z.string(), revoked: z.number().int().nonnegative() }),
    errors: [],
  },
});
