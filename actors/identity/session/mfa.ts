import type { EntityManager } from '@mikro-orm/postgresql';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { generateSecret, generateURI, verifySync } from 'otplib';
import { z } from 'zod';
import { requireUser } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { IdentityDeps } from '../deps.ts';
import { type SessionServices } from './services.ts';
import { verifyCurrentPassword } from './reauth.ts';

/** TOTP (docs/api/identity.md): SHA-1, 30-second period, 6 digits, one period of skew either side. */
const PERIOD_S = 30;
const TOLERANCE_S = PERIOD_S;
const PENDING_MS = 10 * 60 * 1000;
const RECOVERY_CODES = 8;
/** The issuer shown in authenticator apps. */
export const MFA_ISSUER = 'Infrastructure Console';

// ---------------------------------------------------------------------------------------------------------------
// Factors

/**
 * Checks a TOTP code against a secret at the clock's time and returns its time step, or null. Codes of steps at or
 * before `afterStep` (the last one used) are refused: a code works once.
 */
export function totpStep(secret: string, code: string, nowMs: number, afterStep: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  try {
    const r = verifySync({
      secret,
      token: code,
      algorithm: 'sha1',
      digits: 6,
      period: PERIOD_S,
      epoch: Math.floor(nowMs / 1000),
      epochTolerance: TOLERANCE_S,
      ...(afterStep !== null ? { afterTimeStep: afterStep } : {}),
    });
    return r.valid && 'timeStep' in r ? r.timeStep : null;
  } catch {
    return null;
  }
}

/** `xxxx-xxxx`: 8 hex characters. */
function newRecoveryCode(): string {
  const hex = randomBytes(4).toString('hex');
  return `${hex.slice(0, 4)}-${hex.slice(4)}`;
}

/** Compared without the hyphen and lower-cased; anything else is not a recovery code. */
export function normalizeRecoveryCode(code: string): string | null {
  const c = code.replace(/-/g, '').trim().toLowerCase();
  return /^[0-9a-f]{8}$/.test(c) ? c : null;
}

/**
 * Recovery codes carry only 32 bits, so a plain hash could be reversed from a stolen table in seconds: they are
 * stored as an HMAC under a key derived from SVC_MFA_ENCRYPTION_KEY, which is not in the database.
 */
export function recoveryCodeHash(deps: IdentityDeps, normalized: string): string {
  const key = createHmac('sha256', Buffer.from(deps.config.SVC_MFA_ENCRYPTION_KEY ?? '', 'hex'))
    .update('svc.mfa.recovery-code.v1')
    .digest();
  return createHmac('sha256', key).update(normalized).digest('hex');
}

interface FactorUser {
  id: string;
  mfa_secret_enc: string | null;
  mfa_last_used_step: string | number | null;
}

/**
 * Verifies a second factor and consumes it: a TOTP code moves `mfa_last_used_step` forward with a conditional update
 * (of two requests with the same code only one succeeds), a recovery code is marked used with a conditional update.
 * Returns which factor worked, or null.
 */
export async function consumeSecondFactor(
  deps: IdentityDeps,
  em: EntityManager,
  user: FactorUser,
  code: string,
): Promise<'totp' | 'recovery_code' | null> {
  const trimmed = code.trim();
  if (/^\d{6}$/.test(trimmed)) {
    if (!user.mfa_secret_enc) return null;
    const last = user.mfa_last_used_step === null ? null : Number(user.mfa_last_used_step);
    const step = totpStep(deps.box.open(user.mfa_secret_enc), trimmed, deps.clock.now(), last);
    if (step === null) return null;
    const rows = await em.execute<{ id: string }[]>(
      `UPDATE users SET mfa_last_used_step = ? WHERE id = ? AND mfa_enabled AND (mfa_last_used_step IS NULL OR mfa_last_used_step < ?) RETURNING id`,
      [step, user.id, step],
    );
    return rows.length > 0 ? 'totp' : null;
  }
  const normalized = normalizeRecoveryCode(trimmed);
  if (!normalized) return null;
  const rows = await em.execute<{ id: string }[]>(
    `UPDATE mfa_recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL RETURNING id`,
    [new Date(deps.clock.now()), user.id, recoveryCodeHash(deps, normalized)],
  );
  return rows.length > 0 ? 'recovery_code' : null;
}

// ---------------------------------------------------------------------------------------------------------------
// Enrolment

/** The secret of a setup in progress, held in the key-value store only, sealed like the stored secret. */
const Pending = z.object({
  secret_enc: z.string(),
  code_hashes: z.array(z.string()).length(RECOVERY_CODES),
  expires_at: z.number(),
});
const pendingKey = (userId: string): string => `mfa:pending:${userId}`;

export async function mfaSetup(
  s: SessionServices,
  ctx: CallerContext,
): Promise<{ secret: string; qr_code_uri: string; recovery_codes: string[] }> {
  const { deps } = s;
  const p = requireUser(ctx);
  const rows = await deps.orm.em
    .fork()
    .execute<{ email: string; mfa_enabled: boolean }[]>(`SELECT email, mfa_enabled FROM users WHERE id = ?`, [
      p.user_id,
    ]);
  const user = rows[0];
  if (!user) throw new DomainError('unauthorized', 'account not found');
  if (user.mfa_enabled)
    throw new DomainError(
      'conflict',
      'multi-factor authentication is already enabled; remove it first to enrol a new authenticator',
    );
  const secret = generateSecret();
  const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
  const pending: z.infer<typeof Pending> = {
    secret_enc: deps.box.seal(secret),
    code_hashes: codes.map((c) => recoveryCodeHash(deps, normalizeRecoveryCode(c)!)),
    expires_at: deps.clock.now() + PENDING_MS,
  };
  // A second setup replaces the first: only the latest QR code can be confirmed.
  await deps.kv.set(pendingKey(p.user_id), JSON.stringify(pending), { ttlMs: PENDING_MS });
  return {
    secret,
    qr_code_uri: generateURI({
      issuer: MFA_ISSUER,
      label: user.email,
      secret,
      algorithm: 'sha1',
      digits: 6,
      period: PERIOD_S,
    }),
    recovery_codes: codes,
  };
}

export async function mfaConfirm(
  s: SessionServices,
  input: { code: string },
  ctx: CallerContext,
): Promise<{ mfa_enabled: true }> {
  const { deps } = s;
  const p = requireUser(ctx);
  const raw = await deps.kv.get(pendingKey(p.user_id));
  const parsed = raw ? Pending.safeParse(JSON.parse(raw)) : undefined;
  const pending = parsed?.success ? parsed.data : undefined;
  if (!pending || pending.expires_at <= deps.clock.now()) {
    throw new DomainError(
      'bad_request',
      'no multi-factor setup is pending (it expires after 10 minutes); start again with POST /api/v1/auth/mfa/setup',
    );
  }
  const step = totpStep(deps.box.open(pending.secret_enc), input.code, deps.clock.now(), null);
  if (step === null) throw new DomainError('bad_request', 'code: is not valid for the pending secret');
  const now = new Date(deps.clock.now());
  await deps.orm.em.fork().transactional(async (em) => {
    const enabled = await em.execute<{ id: string }[]>(
      `UPDATE users SET mfa_enabled = true, mfa_secret_enc = ?, mfa_last_used_step = ?, updated_at = ? WHERE id = ? AND NOT mfa_enabled RETURNING id`,
      [pending.secret_enc, step, now, p.user_id],
    );
    if (enabled.length === 0) throw new DomainError('conflict', 'multi-factor authentication is already enabled');
    await em.execute(`DELETE FROM mfa_recovery_codes WHERE user_id = ?`, [p.user_id]);
    const values = pending.code_hashes.map(() => '(?, ?, ?, ?)').join(', ');
    await em.execute(
      `INSERT INTO mfa_recovery_codes (id, user_id, code_hash, created_at) VALUES ${values}`,
      pending.code_hashes.flatMap((h) => [randomUUID(), p.user_id, h, now]),
    );
  });
  await deps.kv.del(pendingKey(p.user_id));
  // mfa_enabled is part of the cached access resolution: the gate must open on the very next request.
  await deps.access.invalidateUsers([p.user_id]);
  await deps.audit.record(ctx, {
    action: 'user.mfa_enabled',
    resource_type: 'user',
    resource_id: p.user_id,
    client_ids: [],
  });
  return { mfa_enabled: true };
}

export async function mfaDisable(
  s: SessionServices,
  input: { password: string },
  ctx: CallerContext,
): Promise<{ mfa_enabled: false }> {
  const { deps } = s;
  const p = requireUser(ctx);
  await verifyCurrentPassword(s, p.user_id, input.password, 'password');
  await deps.orm.em.fork().transactional(async (em) => {
    await em.execute(
      `UPDATE users SET mfa_enabled = false, mfa_secret_enc = NULL, mfa_last_used_step = NULL, updated_at = ? WHERE id = ?`,
      [new Date(deps.clock.now()), p.user_id],
    );
    await em.execute(`DELETE FROM mfa_recovery_codes WHERE user_id = ?`, [p.user_id]);
  });
  await deps.access.invalidateUsers([p.user_id]);
  await deps.audit.record(ctx, {
    action: 'user.mfa_disabled',
    resource_type: 'user',
    resource_id: p.user_id,
    client_ids: [],
  });
  return { mfa_enabled: false };
}
