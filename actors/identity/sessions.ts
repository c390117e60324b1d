import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { UAParser } from 'ua-parser-js';
import type { TokenResponse } from '../../contracts/domains/identity-auth.ts';
import { randomToken, sha256 } from './crypto.ts';
import type { IdentityDeps } from './deps.ts';

/** Where a sign-in came from: recorded on the session. */
export interface ClientOrigin {
  ip?: string | null | undefined;
  user_agent?: string | null | undefined;
}

/** "Chrome on macOS", "Mobile Safari on iOS", "curl"; the first product token when the parser knows neither part. */
export function deviceLabel(userAgent: string | null | undefined): string {
  if (!userAgent) return 'Unknown device';
  const r = UAParser(userAgent);
  const browser = r.browser.name;
  const os = r.os.name;
  if (browser && os) return `${browser} on ${os}`;
  if (browser) return browser;
  if (os) return `Unknown browser on ${os}`;
  const product = /^([A-Za-z][\w.-]{0,40})/.exec(userAgent)?.[1];
  return product ?? 'Unknown device';
}

/**
 * Signs a user in: a session row (IP, user agent, device label, expiry = now + SVC_JWT_REFRESH_TTL), its first refresh
 * token (stored as a hash), an access token, and `last_login_at`. Runs on `em`, so a caller inside
 * `em.transactional(...)` gets it in its transaction. The caller writes the audit entry (it has the context).
 * Shared by the password/MFA login, accept-invite and the SSO exchange: keep the signature stable.
 */
export async function issueSession(
  deps: IdentityDeps,
  em: EntityManager,
  user: { id: string; email: string },
  origin: ClientOrigin,
): Promise<TokenResponse> {
  const now = deps.clock.now();
  const sessionId = randomUUID();
  const refreshToken = randomToken();
  const ua = origin.user_agent ? origin.user_agent.slice(0, 512) : null;
  await em.execute(
    `INSERT INTO sessions (id, user_id, ip_address, user_agent, device_label, last_active_at, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      sessionId,
      user.id,
      origin.ip ?? null,
      ua,
      deviceLabel(ua),
      new Date(now),
      new Date(now + deps.config.SVC_JWT_REFRESH_TTL * 1000),
      new Date(now),
    ],
  );
  await em.execute(`INSERT INTO refresh_tokens (token_hash, session_id, created_at) VALUES (?, ?, ?)`, [
    sha256(refreshToken),
    sessionId,
    new Date(now),
  ]);
  await em.execute(`UPDATE users SET last_login_at = ? WHERE id = ?`, [new Date(now), user.id]);
  return tokenResponse(deps, user, sessionId, refreshToken);
}

/** The token response for a session whose refresh token is `refreshToken`. */
export async function tokenResponse(
  deps: IdentityDeps,
  user: { id: string; email: string },
  sessionId: string,
  refreshToken: string,
): Promise<TokenResponse> {
  const access = await deps.tokens.sign({ sub: user.id, sid: sessionId, email: user.email });
  return {
    access_token: access,
    refresh_token: refreshToken,
    session_id: sessionId,
    token_type: 'Bearer',
    expires_in: deps.tokens.ttlSeconds,
  };
}

/** Revokes every live session of a user (password reset, user disabled); returns how many. */
export async function revokeAllSessions(
  deps: Pick<IdentityDeps, 'clock'>,
  em: EntityManager,
  userId: string,
  reason: string,
): Promise<number> {
  const rows = await em.execute<{ id: string }[]>(
    `UPDATE sessions SET is_revoked = true, revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND NOT is_revoked RETURNING id`,
    [new Date(deps.clock.now()), reason, userId],
  );
  return rows.length;
}
