import { requireUser } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type { MeView, SessionView, TokenResponse } from '../../../contracts/domains/identity-auth.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { randomToken, sha256 } from '../crypto.ts';
import { tokenResponse } from '../sessions.ts';
import { auditQuietly, iso, type SessionServices } from './services.ts';

type RefreshOutcome =
  | { kind: 'ok'; tokens: TokenResponse }
  | { kind: 'replay'; session_id: string; user_id: string | null }
  | { kind: 'unknown' }
  | { kind: 'refused' };

const refreshRefused = (): DomainError => new DomainError('unauthorized', 'invalid, expired or revoked refresh token');

/**
 * Rotates a refresh token. The old token is retired with one conditional update (`rotated_at IS NULL`), so of two
 * requests presenting it only one gets a successor. A retired token presented again means it leaked (or the client
 * forked): the whole session is revoked, so the thief's and the owner's latest tokens both stop working. The session
 * must be live (not revoked, not past expires_at) and its user active; every refresh slides the session's expiry to
 * now + SVC_JWT_REFRESH_TTL (the lifetime of the new refresh token).
 */
export async function refresh(
  s: SessionServices,
  input: { refresh_token: string },
  ctx: CallerContext,
): Promise<TokenResponse> {
  const { deps } = s;
  const hash = sha256(input.refresh_token);
  const nowMs = deps.clock.now();
  const now = new Date(nowMs);
  const outcome = await deps.orm.em.fork().transactional(async (em): Promise<RefreshOutcome> => {
    const rotated = await em.execute<{ session_id: string }[]>(
      `UPDATE refresh_tokens SET rotated_at = ? WHERE token_hash = ? AND rotated_at IS NULL RETURNING session_id`,
      [now, hash],
    );
    const sessionId = rotated[0]?.session_id;
    if (!sessionId) {
      const known = await em.execute<{ session_id: string }[]>(
        `SELECT session_id FROM refresh_tokens WHERE token_hash = ?`,
        [hash],
      );
      const replayed = known[0]?.session_id;
      if (!replayed) return { kind: 'unknown' };
      const revoked = await em.execute<{ user_id: string }[]>(
        `UPDATE sessions SET is_revoked = true, revoked_at = ?, revoked_reason = 'refresh_token_reuse' WHERE id = ? AND NOT is_revoked RETURNING user_id`,
        [now, replayed],
      );
      return { kind: 'replay', session_id: replayed, user_id: revoked[0]?.user_id ?? null };
    }
    const rows = await em.execute<
      { user_id: string; is_revoked: boolean; expires_at: Date; email: string; status: string }[]
    >(
      `SELECT s.user_id, s.is_revoked, s.expires_at, u.email, u.status FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ? FOR UPDATE OF s`,
      [sessionId],
    );
    const row = rows[0];
    // The presented token is retired either way: it belonged to a session that can no longer be refreshed.
    if (!row || row.is_revoked || new Date(row.expires_at).getTime() <= nowMs || row.status !== 'active')
      return { kind: 'refused' };
    const next = randomToken();
    await em.execute(`INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, [
      sha256(next),
      sessionId,
      now,
    ]);
    await em.execute(`UPDATE sessions SET last_active_at = ?, expires_at = ? WHERE id = ?`, [
      now,
      new Date(nowMs + deps.config.SVC_JWT_REFRESH_TTL * 1000),
      sessionId,
    ]);
    return { kind: 'ok', tokens: await tokenResponse(deps, { id: row.user_id, email: row.email }, sessionId, next) };
  });
  if (outcome.kind === 'ok') return outcome.tokens;
  if (outcome.kind === 'replay' && outcome.user_id) {
    deps.log.warn(
      { session_id: outcome.session_id, user_id: outcome.user_id, ip: ctx.ip },
      'rotated refresh token presented again; session revoked',
    );
    const userId = outcome.user_id;
    await auditQuietly(deps, () =>
      deps.audit.record(ctx, {
        action: 'session.revoked',
        resource_type: 'session',
        resource_id: outcome.session_id,
        client_ids: [],
        details: { reason: 'refresh_token_reuse', user_id: userId },
      }),
    );
  }
  throw refreshRefused();
}

/** Revokes the session of a refresh token, only when that session is the caller's; always the same answer. */
export async function logout(
  s: SessionServices,
  input: { refresh_token: string },
  ctx: CallerContext,
): Promise<{ message: string }> {
  const { deps } = s;
  const p = requireUser(ctx);
  const rows = await deps.orm.em.fork().execute<{ id: string }[]>(
    `UPDATE sessions s SET is_revoked = true, revoked_at = ?, revoked_reason = 'logout'
       FROM refresh_tokens rt
      WHERE rt.token_hash = ? AND rt.session_id = s.id AND s.user_id = ? AND NOT s.is_revoked
      RETURNING s.id`,
    [new Date(deps.clock.now()), sha256(input.refresh_token), p.user_id],
  );
  if (rows[0])
    await deps.audit.record(ctx, {
      action: 'user.logout',
      resource_type: 'session',
      resource_id: rows[0].id,
      client_ids: [],
    });
  return { message: 'Logged out.' };
}

interface SessionRow {
  id: string;
  user_id: string;
  ip_address: string | null;
  user_agent: string | null;
  device_label: string | null;
  is_revoked: boolean;
  last_active_at: Date;
  expires_at: Date;
  created_at: Date;
}

export async function listSessions(s: SessionServices, ctx: CallerContext): Promise<SessionView[]> {
  const { deps } = s;
  const p = requireUser(ctx);
  const rows = await deps.orm.em.fork().execute<SessionRow[]>(
    `SELECT id, user_id, ip_address, user_agent, device_label, is_revoked, last_active_at, expires_at, created_at
       FROM sessions WHERE user_id = ? AND NOT is_revoked AND expires_at > ?
      ORDER BY last_active_at DESC, created_at DESC`,
    [p.user_id, new Date(deps.clock.now())],
  );
  return rows.map((r) => ({
    id: r.id,
    user_id: r.user_id,
    ip_address: r.ip_address,
    user_agent: r.user_agent,
    device_label: r.device_label,
    is_revoked: r.is_revoked,
    is_current: r.id === p.session_id,
    last_active_at: iso(r.last_active_at),
    expires_at: iso(r.expires_at),
    created_at: iso(r.created_at),
  }));
}

/** Only the owner may revoke a session: another user's id answers 404, exactly like an unknown one. */
export async function revokeSession(
  s: SessionServices,
  input: { id: string },
  ctx: CallerContext,
): Promise<{ message: string }> {
  const { deps } = s;
  const p = requireUser(ctx);
  // Idempotent for the owner: revoking an already revoked session keeps its original time and reason.
  const rows = await deps.orm.em.fork().execute<{ id: string }[]>(
    `UPDATE sessions SET is_revoked = true, revoked_at = COALESCE(revoked_at, ?), revoked_reason = COALESCE(revoked_reason, 'user_revoked')
      WHERE id = ? AND user_id = ? RETURNING id`,
    [new Date(deps.clock.now()), input.id, p.user_id],
  );
  if (!rows[0]) throw new DomainError('not_found', 'session not found');
  await deps.audit.record(ctx, {
    action: 'session.revoked',
    resource_type: 'session',
    resource_id: input.id,
    client_ids: [],
    details: { reason: 'user_revoked' },
  });
  return { message: 'Session revoked.' };
}

export async function revokeAllSessions(
  s: SessionServices,
  ctx: CallerContext,
): Promise<{ message: string; revoked: number }> {
  const { deps } = s;
  const p = requireUser(ctx);
  const rows = await deps.orm.em
    .fork()
    .execute<{ id: string }[]>(
      `UPDATE sessions SET is_revoked = true, revoked_at = ?, revoked_reason = 'user_revoked_all' WHERE user_id = ? AND NOT is_revoked RETURNING id`,
      [new Date(deps.clock.now()), p.user_id],
    );
  await deps.audit.record(ctx, {
    action: 'session.revoked_all',
    resource_type: 'user',
    resource_id: p.user_id,
    client_ids: [],
    details: { revoked: rows.length },
  });
  return { message: 'All sessions revoked.', revoked: rows.length };
}

/** The signed-in user and the resolved client access map (a super admin's map is empty: `is_super_admin` says all). */
export async function me(s: SessionServices, ctx: CallerContext): Promise<MeView> {
  const { deps } = s;
  const p = requireUser(ctx);
  const rows = await deps.orm.em.fork().execute<
    {
      id: string;
      email: string;
      display_name: string;
      mfa_enabled: boolean;
      status: 'invited' | 'active' | 'disabled';
      is_super_admin: boolean;
    }[]
  >(`SELECT id, email, display_name, mfa_enabled, status, is_super_admin FROM users WHERE id = ?`, [p.user_id]);
  const user = rows[0];
  if (!user) throw new DomainError('unauthorized', 'account not found');
  return { user, client_access: ctx.access?.clients ?? {} };
}
