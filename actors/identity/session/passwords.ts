import { requireUser } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { FORGOT_PASSWORD_MESSAGE, type TokenResponse } from '../../../contracts/domains/identity-auth.ts';
import { Headers } from '../../../contracts/envelope.ts';
import { PasswordResetRequested } from '../../../contracts/streams.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { publishDurable, runConsumer, type ConsumerHandle } from '../../runtime/jetstream.ts';
import { sendPasswordReset } from '../email.ts';
import { cancelOneTimeTokens, consumeOneTimeToken, createOneTimeToken, peekOneTimeToken } from '../one-time-tokens.ts';
import { checkPasswordHistory, checkPasswordPolicy, storePassword } from '../password-policy.ts';
import { issueSession, revokeAllSessions } from '../sessions.ts';
import { verifyCurrentPassword } from './reauth.ts';
import { normalizeEmail, type SessionServices } from './services.ts';

/** Forgot-password requests are queued as work, so the answer costs the same whether the account exists or not. */

/** Always the same answer and the same work (one durable publish): nothing here depends on the account existing. */
export async function forgotPassword(s: SessionServices, input: { email: string }, ctx: CallerContext): Promise<{ message: string }> {
  const payload: PasswordResetRequested = { email: normalizeEmail(input.email), request_id: ctx.request_id, ...(ctx.ip ? { ip: ctx.ip } : {}) };
  await publishDurable(s.deps.nc, 'svc.work.identity.password_reset', payload, { headers: { [Headers.requestId]: ctx.request_id } });
  return { message: FORGOT_PASSWORD_MESSAGE };
}

/** The worker behind forgot-password: a reset token and mail, only for an active account with a password. */
export function startPasswordResetWorker(s: SessionServices): Promise<ConsumerHandle> {
  const { deps } = s;
  return runConsumer({
    nc: deps.nc,
    stream: 'SVC_WORK',
    durable: 'identity-password-reset',
    filterSubjects: ['svc.work.identity.password_reset'],
    schema: PasswordResetRequested,
    maxDeliver: 5,
    log: deps.log.child({ actor: 'identity-password-reset' }),
    handler: async (job, meta) => {
      const em = deps.orm.em.fork();
      const rows = await em.execute<{ id: string; email: string; display_name: string }[]>(
        `SELECT id, email, display_name FROM users WHERE lower(email) = ? AND status = 'active' AND password_hash IS NOT NULL`,
        [job.email],
      );
      const user = rows[0];
      if (!user) {
        meta.log.info('password reset requested for no eligible account; nothing sent');
        return;
      }
      const token = await createOneTimeToken(em, deps, user.id, 'reset');
      await sendPasswordReset(deps, user, token);
      const ctx: CallerContext = { request_id: job.request_id, ...(job.ip ? { ip: job.ip } : {}), principal: { kind: 'anonymous' } };
      await deps.audit.record(ctx, { action: 'user.password_reset_requested', resource_type: 'user', resource_id: user.id, actor: { id: user.id, email: user.email } });
    },
  });
}

const invalidResetToken = (): DomainError => new DomainError('bad_request', 'token: invalid or expired reset token');
const invalidInvite = (): DomainError => new DomainError('bad_request', 'token: invalid or expired invitation');

/**
 * Sets a new password with a reset token. The policy and history are checked before the token is redeemed, so a
 * refused password leaves the link usable; the redemption itself is one conditional update inside the transaction
 * that sets the password, cancels other reset links and revokes every session: of two racing requests exactly one
 * succeeds. The login lockout of the account is cleared: its owner has just proved control of the mailbox.
 */
export async function resetPassword(s: SessionServices, input: { token: string; new_password: string }, ctx: CallerContext): Promise<{ message: string }> {
  const { deps } = s;
  checkPasswordPolicy(input.new_password, 'new_password');
  const em = deps.orm.em.fork();
  const peek = await peekOneTimeToken(em, deps, input.token, 'reset');
  if (!peek) throw invalidResetToken();
  await checkPasswordHistory(deps, em, peek.user_id, input.new_password, 'new_password');
  const hash = await deps.hasher.hash(input.new_password);
  const result = await deps.orm.em.fork().transactional(async (tem) => {
    const redeemed = await consumeOneTimeToken(tem, deps, input.token, 'reset');
    if (!redeemed) throw invalidResetToken();
    const users = await tem.execute<{ id: string; email: string; status: string }[]>(`SELECT id, email, status FROM users WHERE id = ? FOR UPDATE`, [redeemed.user_id]);
    const user = users[0];
    if (!user || user.status !== 'active') throw invalidResetToken();
    await storePassword(deps, tem, user.id, hash);
    await cancelOneTimeTokens(tem, deps, user.id, 'reset');
    const revoked = await revokeAllSessions(deps, tem, user.id, 'password_reset');
    return { user, revoked };
  });
  await s.loginLockout.reset(normalizeEmail(result.user.email));
  await deps.audit.record(ctx, {
    action: 'user.password_reset',
    resource_type: 'user',
    resource_id: result.user.id,
    actor: { id: result.user.id, email: result.user.email },
    details: { sessions_revoked: result.revoked },
  });
  return { message: 'Password has been reset. Sign in with the new password.' };
}

/** Changes the signed-in user's password; outstanding reset links stop working. Sessions are kept. */
export async function changePassword(s: SessionServices, input: { current_password: string; new_password: string }, ctx: CallerContext): Promise<{ message: string }> {
  const { deps } = s;
  const p = requireUser(ctx);
  await verifyCurrentPassword(s, p.user_id, input.current_password, 'current_password');
  checkPasswordPolicy(input.new_password, 'new_password');
  await checkPasswordHistory(deps, deps.orm.em.fork(), p.user_id, input.new_password, 'new_password');
  const hash = await deps.hasher.hash(input.new_password);
  await deps.orm.em.fork().transactional(async (tem) => {
    await storePassword(deps, tem, p.user_id, hash);
    await cancelOneTimeTokens(tem, deps, p.user_id, 'reset');
  });
  await deps.audit.record(ctx, { action: 'user.password_changed', resource_type: 'user', resource_id: p.user_id });
  return { message: 'Password changed.' };
}

/**
 * Activates an invited user: in one transaction the invitation is redeemed (conditional update), the user becomes
 * active with the password, and a session is issued. MFA enrolment is still required afterwards: the new user's
 * other routes answer 403 mfa_enrollment_required until /auth/mfa/setup and /auth/mfa/confirm are done.
 */
export async function acceptInvite(s: SessionServices, input: { token: string; password: string }, ctx: CallerContext): Promise<TokenResponse> {
  const { deps } = s;
  checkPasswordPolicy(input.password, 'password');
  // A look first, so a made-up token costs no password hash.
  if (!(await peekOneTimeToken(deps.orm.em.fork(), deps, input.token, 'invite'))) throw invalidInvite();
  const hash = await deps.hasher.hash(input.password);
  const { user, tokens } = await deps.orm.em.fork().transactional(async (tem) => {
    const redeemed = await consumeOneTimeToken(tem, deps, input.token, 'invite');
    if (!redeemed) throw invalidInvite();
    const users = await tem.execute<{ id: string; email: string; status: string }[]>(`SELECT id, email, status FROM users WHERE id = ? FOR UPDATE`, [redeemed.user_id]);
    const u = users[0];
    if (!u || u.status !== 'invited') throw new DomainError('bad_request', 'token: this invitation is no longer valid');
    await tem.execute(`UPDATE users SET status = 'active', updated_at = ? WHERE id = ?`, [new Date(deps.clock.now()), u.id]);
    await storePassword(deps, tem, u.id, hash);
    return { user: u, tokens: await issueSession(deps, tem, u, ctx) };
  });
  // Status is part of the cached resolution.
  await deps.access.invalidateUsers([user.id]);
  const actor = { id: user.id, email: user.email };
  await deps.audit.record(ctx, { action: 'user.invite_accepted', resource_type: 'user', resource_id: user.id, actor });
  await deps.audit.record(ctx, { action: 'user.login', resource_type: 'user', resource_id: user.id, actor, details: { method: 'invitation', session_id: tokens.session_id } });
  return tokens;
}
