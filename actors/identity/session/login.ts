import type { CallerContext } from '../../../contracts/context.ts';
import type { MfaChallenge, TokenResponse } from '../../../contracts/domains/identity-auth.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { issueSession } from '../sessions.ts';
import { CHALLENGE_MS, Challenge, challengeKey, createMfaChallenge } from '../mfa-challenge.ts';
import { consumeSecondFactor } from './mfa.ts';
import { auditQuietly, invalidCredentials, normalizeEmail, type SessionServices } from './services.ts';

/** At most this many wrong codes per MFA challenge. */
const CHALLENGE_TRIES = 5;

interface LoginUser {
  id: string;
  email: string;
  status: 'invited' | 'active' | 'disabled';
  password_hash: string | null;
  mfa_enabled: boolean;
}

/**
 * Login, in the order docs/api/identity.md#login-lockout-and-mfa gives: (1) lockout, (2) user by e-mail, (3) status,
 * (4) password, (5) MFA challenge, (6-7) tokens and session, (8) audit. Every refusal is the same 401 after the same
 * work: an unknown e-mail, an account that is not active or has no password (single sign-on only) cost one verification
 * against the dummy hash (`verifyDummy`), exactly what a wrong password costs, so neither the answer nor its timing
 * tells them apart. The attempt is counted (1) before any hash runs, so parallel guesses cannot outrun the lockout.
 */
export async function login(
  s: SessionServices,
  input: { email: string; password: string },
  ctx: CallerContext,
): Promise<TokenResponse | MfaChallenge> {
  const { deps } = s;
  const email = normalizeEmail(input.email);
  const attempt = await s.loginLockout.begin(email);
  try {
    const em = deps.orm.em.fork();
    const rows = await em.execute<LoginUser[]>(
      `SELECT id, email, status, password_hash, mfa_enabled FROM users WHERE lower(email) = ?`,
      [email],
    );
    const found = rows[0];
    const user = found?.status === 'active' && found.password_hash ? found : undefined;
    const passwordOk = user?.password_hash
      ? await deps.hasher.verify(user.password_hash, input.password)
      : await deps.hasher.verifyDummy(input.password);
    if (!user || !passwordOk) {
      await attempt.fail();
      await auditQuietly(deps, () =>
        deps.audit.record(ctx, {
          action: 'user.login_failed',
          resource_type: 'user',
          resource_id: found?.id ?? null,
          client_ids: [],
          details: { email },
          ...(found ? { actor: { id: found.id, email: found.email } } : {}),
        }),
      );
      throw invalidCredentials();
    }
    // The password is right: that is a successful login as far as the password lockout goes.
    await attempt.succeed();

    if (user.mfa_enabled) {
      return { mfa_required: true, mfa_token: await createMfaChallenge(deps, user.id, 'password') };
    }
    const tokens = await issueSession(deps, em, user, ctx);
    await deps.audit.record(ctx, {
      action: 'user.login',
      resource_type: 'user',
      resource_id: user.id,
      client_ids: [],
      actor: { id: user.id, email: user.email },
      details: { method: 'password', session_id: tokens.session_id },
    });
    return tokens;
  } finally {
    await attempt.settle();
  }
}

/**
 * Second step of a login with MFA: the challenge names the user; failures count on the user's own MFA lockout (same
 * tiers as the password's), and a challenge dies after CHALLENGE_TRIES wrong codes. A good code consumes the factor
 * (TOTP step or recovery code) and then the challenge (getDel: of concurrent winners only one gets a session).
 */
export async function mfaVerify(
  s: SessionServices,
  input: { mfa_token: string; code: string },
  ctx: CallerContext,
): Promise<TokenResponse> {
  const { deps } = s;
  const key = challengeKey(input.mfa_token);
  const raw = await deps.kv.get(key);
  const parsed = raw ? Challenge.safeParse(JSON.parse(raw)) : undefined;
  const challenge = parsed?.success ? parsed.data : undefined;
  if (!challenge || challenge.expires_at <= deps.clock.now()) {
    if (raw) await deps.kv.del(key);
    throw new DomainError('unauthorized', 'invalid or expired MFA token; sign in again');
  }
  const attempt = await s.mfaLockout.begin(challenge.user_id);
  try {
    const em = deps.orm.em.fork();
    const rows = await em.execute<
      {
        id: string;
        email: string;
        status: string;
        mfa_enabled: boolean;
        mfa_secret_enc: string | null;
        mfa_last_used_step: string | null;
      }[]
    >(`SELECT id, email, status, mfa_enabled, mfa_secret_enc, mfa_last_used_step FROM users WHERE id = ?`, [
      challenge.user_id,
    ]);
    const user = rows[0];
    if (!user || user.status !== 'active' || !user.mfa_enabled) {
      await deps.kv.del(key);
      throw new DomainError('unauthorized', 'invalid or expired MFA token; sign in again');
    }
    const factor = await consumeSecondFactor(deps, em, user, input.code);
    if (!factor) {
      await attempt.fail();
      const tries = await deps.kv.incr(`${key}:tries`, CHALLENGE_MS);
      if (tries >= CHALLENGE_TRIES) await deps.kv.del(key);
      await auditQuietly(deps, () =>
        deps.audit.record(ctx, {
          action: 'user.mfa_failed',
          resource_type: 'user',
          resource_id: user.id,
          client_ids: [],
          actor: { id: user.id, email: user.email },
        }),
      );
      throw new DomainError('unauthorized', 'invalid authentication code');
    }
    if (!(await deps.kv.getDel(key)))
      throw new DomainError('unauthorized', 'invalid or expired MFA token; sign in again');
    await attempt.succeed();
    const tokens = await issueSession(deps, em, user, ctx);
    await deps.audit.record(ctx, {
      action: 'user.login',
      resource_type: 'user',
      resource_id: user.id,
      client_ids: [],
      actor: { id: user.id, email: user.email },
      details: { method: challenge.method, second_factor: factor, session_id: tokens.session_id },
    });
    return tokens;
  } finally {
    await attempt.settle();
  }
}
