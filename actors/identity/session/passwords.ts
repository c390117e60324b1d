import { requireUser } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { FORGOT_PASSWORD_MESSAGE, type TokenResponse } from '../../../contracts/domains/identity-auth.ts';
import { Headers } from '../../../contracts/envelope.ts';
import { PasswordResetRequested } from '../../../contracts/streams.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { publishDurable, runConsumer, type ConsumerHandle } from '../../../platform/jetstream.ts';
import { sendPasswordChanged, sendPasswordReset } from '../email.ts';
import { cancelOneTimeTokens, consumeOneTimeToken, createOneTimeToken, peekOneTimeToken } from '../one-time-tokens.ts';
import { checkPasswordHistory, checkPasswordPolicy, storePassword } from '../password-policy.ts';
import { issueSession, revokeAllSessions } from '../sessions.ts';
import { verifyCurrentPassword } from './reauth.ts';
import { normalizeEmail, type SessionServices } from './services.ts';

/** Forgot-password requests are queued as work, so the answer costs the same whether the account exists or not. */

/** Always the same answer and the same work (one durable publish): nothing here depends on the account existing. */
export async function forgotPassword(
  s: SessionServices,
  input: { email: string },
  ctx: CallerContext,
): Promise<{ message: string }> {
  const payload: PasswordResetRequested = {
    email: normalizeEmail(input.email),
    request_id: ctx.request_id,
    ...(ctx.ip ? { ip: ctx.ip } : {}),
  };
  await publishDurable(s.deps.nc, 'svc.work.identity.password_reset', payload, {
    headers: { [Headers.requestId]: ctx.request_id },
  });
  return { message: FORGOT_PASSWORD_MESSAGE };
}

/**
 * Reset mails one account may receive per hour. Beyond it a request is answered the same (the answer never depends
 * on the account) and nothing is sent: otherwise anyone could bomb a mailbox, bounded only by the per-IP rate limit.
 * Every reset token of the hour counts, an administrator's included, since each one was a mail.
 */
export const RESET_MAILS_PER_HOUR = 3;
const HOUR_MS = 60 * 60 * 1000;

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
      // The user row is locked while counting, so instances handling requests for one address at once count in turn.
      const outcome = await deps.orm.em.fork().transactional(async (tem) => {
        const rows = await tem.execute<{ id: string; email: string; display_name: string }[]>(
          `SELECT id, email, display_name FROM users WHERE lower(email) = ? AND status = 'active' AND password_hash IS NOT NULL FOR UPDATE`,
          [job.email],
        );
        const user = rows[0];
        if (!user) return { kind: 'none' as const };
        const recent = await tem.execute<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM one_time_tokens WHERE user_id = ? AND purpose = 'reset' AND created_at > ?`,
          [user.id, new Date(deps.clock.now() - HOUR_MS)],
        );
        if ((recent[0]?.n ?? 0) >= RESET_MAILS_PER_HOUR) return { kind: 'throttled' as const, user };
        return { kind: 'send' as const, user, token: await createOneTimeToken(tem, deps, user.id, 'reset') };
      });
      if (outcome.kind === 'none') {
        meta.log.info('password reset requested for no eligible account; nothing sent');
        return;
      }
      const { user } = outcome;
      const ctx: CallerContext = {
        request_id: job.request_id,
        ...(job.ip ? { ip: job.ip } : {}),
        principal: { kind: 'anonymous' },
      };
      const actor = { id: user.id, email: user.email };
      if (outcome.kind === 'throttled') {
        meta.log.warn(
          { user_id: user.id, limit: RESET_MAILS_PER_HOUR },
          'password reset mails per hour reached; nothing sent',
        );
        await deps.audit.record(ctx, {
          action: 'user.password_reset_throttled',
          resource_type: 'user',
          resource_id: user.id,
          client_ids: [],
          actor,
          details: { limit_per_hour: RESET_MAILS_PER_HOUR },
        });
        return;
      }
      await sendPasswordReset(deps, user, outcome.token);
      await deps.audit.record(ctx, {
        action: 'user.password_reset_requested',
        resource_type: 'user',
        resource_id: user.id,
        client_ids: [],
        actor,
      });
    },
  });
}

/**
 * Mails the owner that the password was changed or reset. Queued after the change is committed; a failure to queue
 * is logged, not answered: the password did change, and the caller must not retry a change that happened.
 */
async function noticePasswordChanged(
  s: SessionServices,
  user: { id: string; email: string; display_name: string },
  how: 'changed' | 'reset',
  ctx: CallerContext,
): Promise<void> {
  try {
    await sendPasswordChanged(s.deps, user, how, new Date(s.deps.clock.now()), ctx.ip);
  } catch (err) {
    s.deps.log.error(
      { err, user_id: user.id, request_id: ctx.request_id },
      'password change notice could not be queued',
    );
  }
}

const invalidResetToken = (): DomainError => new DomainError('bad_request', 'token: invalid or expired reset token');
const invalidInvite = (): DomainError => new DomainError('bad_request', 'token: invalid or expired invitation');

/**
 * Sets a new password with a reset token. The policy and history are checked before the token is redeemed, so a
 * refused password leaves the link usable; the redemption itself is one conditional update inside the transaction
 * that sets the password, cancels other reset links and revokes every session: of two racing requests exactly one
 * succeeds. The login lockout of the account is cleared: its owner has just proved control of the mailbox.
 */
export async function resetPassword(
  s: SessionServices,
  input: { token: string; new_password: string },
  ctx: CallerContext,
): Promise<{ message: string }> {
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
    const users = await tem.execute<{ id: string; email: string; display_name: string; status: string }[]>(
      `SELECT id, email, display_name, status FROM users WHERE id = ? FOR UPDATE`,
      [redeemed.user_id],
    );
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
    client_ids: [],
    actor: { id: result.user.id, email: result.user.email },
    details: { sessions_revoked: result.revoked },
  });
  await noticePasswordChanged(s, result.user, 'reset', ctx);
  return { message: 'Password has been reset. Sign in with the new password.' };
}

/** Changes the signed-in user's password; outstanding reset links stop working. Sessions are kept. */
export async function changePassword(
  s: SessionServices,
  input: { current_password: string; new_password: string },
  ctx: CallerContext,
): Promise<{ message: string }> {
  const { deps } = s;
  const p = requireUser(ctx);
  await verifyCurrentPassword(s, p.user_id, input.current_password, 'current_password');
  checkPasswordPolicy(input.new_password, 'new_password');
  await checkPasswordHistory(deps, deps.orm.em.fork(), p.user_id, input.new_password, 'new_password');
  const hash = await deps.hasher.hash(input.new_password);
  const user = await deps.orm.em.fork().transactional(async (tem) => {
    await storePassword(deps, tem, p.user_id, hash);
    await cancelOneTimeTokens(tem, deps, p.user_id, 'reset');
    const rows = await tem.execute<{ id: string; email: string; display_name: string }[]>(
      `SELECT id, email, display_name FROM users WHERE id = ?`,
      [p.user_id],
    );
    return rows[0];
  });
  await deps.audit.record(ctx, {
    action: 'user.password_changed',
    resource_type: 'user',
    resource_id: p.user_id,
    client_ids: [],
  });
  if (user) await noticePasswordChanged(s, user, 'changed', ctx);
  return { message: 'Password changed.' };
}

/**
 * Activates an invited user: in one transaction the invitation is redeemed (conditional update), the user becomes
 * active with the password, and a session is issued. MFA enrolment is still required afterwards: the new user's
 * other routes answer 403 mfa_enrollment_required until /auth/mfa/setup and /auth/mfa/confirm are done.
 */
export async function acceptInvite(
  s: SessionServices,
  input: { token: string; password: string },
  ctx: CallerContext,
): Promise<TokenResponse> {
  const { deps } = s;
  checkPasswordPolicy(input.password, 'password');
  // A look first, so a made-up token costs no password hash.
  if (!(await peekOneTimeToken(deps.orm.em.fork(), deps, input.token, 'invite'))) throw invalidInvite();
  const hash = await deps.hasher.hash(input.password);
  const { user, tokens } = await deps.orm.em.fork().transactional(async (tem) => {
    const redeemed = await consumeOneTimeToken(tem, deps, input.token, 'invite');
    if (!redeemed) throw invalidInvite();
    const users = await tem.execute<{ id: string; email: string; status: string }[]>(
      `SELECT id, email, status FROM users WHERE id = ? FOR UPDATE`,
      [redeemed.user_id],
    );
    const u = users[0];
    if (!u || u.status !== 'invited') throw new DomainError('bad_request', 'token: this invitation is no longer valid');
    await tem.execute(`UPDATE users SET status = 'active', updated_at = ? WHERE id = ?`, [
      new Date(deps.clock.now()),
      u.id,
    ]);
    await storePassword(deps, tem, u.id, hash);
    return { user: u, tokens: await issueSession(deps, tem, u, ctx) };
  });
  // Status is part of the cached resolution.
  await deps.access.invalidateUsers([user.id]);
  const actor = { id: user.id, email: user.email };
  await deps.audit.record(ctx, {
    action: 'user.invite_accepted',
    resource_type: 'user',
    resource_id: user.id,
    client_ids: [],
    actor,
  });
  await deps.audit.record(ctx, {
    action: 'user.login',
    resource_type: 'user',
    resource_id: user.id,
    client_ids: [],
    actor,
    details: { method: 'invitation', session_id: tokens.session_id },
  });
  return tokens;
}
