import { randomUUID } from 'node:crypto';
import argon2 from 'argon2';
import { generateSecret, generateSync } from 'otplib';
import { AccessTokens, SecretBox } from '../../actors/identity/crypto.ts';
import { toPgArray } from '../../platform/stores/pg-values.ts';
import type { Clock } from '../../platform/clock.ts';
import type { TestSystem } from './system.ts';

export interface TestUser {
  id: string;
  email: string;
  password: string;
  /** Base32 TOTP secret when MFA is enabled. */
  totpSecret?: string;
}

export interface CreateUserOptions {
  email?: string;
  password?: string;
  superAdmin?: boolean;
  /** Enrol MFA (default true): without it every protected route answers 403 mfa_enrollment_required. */
  mfa?: boolean;
  status?: 'invited' | 'active' | 'disabled';
  displayName?: string;
}

let hashCache: { password: string; hash: string } | undefined;

/** Inserts a user straight into the database (test set-up only; the product creates users through the API). */
export async function createUser(
  sys: Pick<TestSystem, 'tag' | 'config' | 'stores'>,
  opts: CreateUserOptions = {},
): Promise<TestUser> {
  const id = randomUUID();
  const email = opts.email ?? `user-${sys.tag}-${id.slice(0, 8)}@example.com`;
  const password = opts.password ?? 'correct horse battery staple';
  if (hashCache?.password !== password)
    hashCache = { password, hash: await argon2.hash(password, { type: argon2.argon2id }) };
  const mfa = opts.mfa ?? true;
  const totpSecret = mfa ? generateSecret() : undefined;
  const box = new SecretBox(sys.config.SVC_MFA_ENCRYPTION_KEY!);
  const orm = await sys.stores.orm();
  await orm.em
    .fork()
    .getConnection()
    .execute(
      `INSERT INTO users (id, email, display_name, status, is_super_admin, password_hash, mfa_enabled, mfa_secret_enc) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        email,
        opts.displayName ?? `User ${id.slice(0, 4)}`,
        opts.status ?? 'active',
        opts.superAdmin ?? false,
        hashCache.hash,
        mfa,
        totpSecret ? box.seal(totpSecret) : null,
      ],
    );
  return { id, email, password, ...(totpSecret ? { totpSecret } : {}) };
}

/** A session and a signed access token for `user`, bypassing the login flow (for tests of other routes). */
export async function tokenFor(
  sys: Pick<TestSystem, 'config' | 'stores'> & { clock: Clock },
  user: TestUser,
): Promise<string> {
  const sessionId = randomUUID();
  const orm = await sys.stores.orm();
  await orm.em
    .fork()
    .getConnection()
    .execute(
      `INSERT INTO sessions (id, user_id, ip_address, user_agent, device_label, last_active_at, expires_at) VALUES (?, ?, '127.0.0.1', 'test', 'test', now(), now() + interval '1 day')`,
      [sessionId, user.id],
    );
  return new AccessTokens(sys.config.SVC_JWT_SECRET!, sys.config.SVC_JWT_ACCESS_TTL, () => sys.clock.now()).sign({
    sub: user.id,
    sid: sessionId,
    email: user.email,
  });
}

export async function createClient(
  sys: TestSystem,
  name = `Client ${randomUUID().slice(0, 6)}`,
): Promise<{ id: string; name: string; slug: string }> {
  const id = randomUUID();
  const slug = `c-${sys.tag}-${id.slice(0, 8)}`;
  const orm = await sys.stores.orm();
  await orm.em
    .fork()
    .getConnection()
    .execute(`INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [id, name, slug]);
  return { id, name, slug };
}

/** Gives `user` a role on a client directly, then drops the user's cached access. */
export async function assignRole(sys: TestSystem, userId: string, clientId: string, roleId: string): Promise<void> {
  const orm = await sys.stores.orm();
  await orm.em
    .fork()
    .getConnection()
    .execute(
      `INSERT INTO user_client_roles (user_id, client_id, role_id) VALUES (?, ?, ?) ON CONFLICT (user_id, client_id) DO UPDATE SET role_id = EXCLUDED.role_id`,
      [userId, clientId, roleId],
    );
  await forgetAccess(sys, userId);
}

/**
 * Drops a user's cached access, as the identity domain does on every change, and waits until the gateways' near
 * cache (same process) has applied Valkey's announcement of it: the next request reads the new access.
 */
export async function forgetAccess(sys: TestSystem, userId: string): Promise<void> {
  await (await sys.stores.kv()).del(`access:user:${userId}`);
  await (await sys.stores.kvReads()).settled?.();
}

export { toPgArray };

// ---------------------------------------------------------------------------------------------------------------
// Real sign-in (session actor engineer)

/** The TOTP code an authenticator app shows for `secret` at the test clock's time (or at `atMs`). */
export function totpCode(secret: string, clock: { now(): number }, atMs?: number): string {
  return generateSync({ secret, epoch: Math.floor((atMs ?? clock.now()) / 1000) });
}

export interface TokenPair {
  access_token: string;
  refresh_token: string;
  session_id: string;
  token_type: 'Bearer';
  expires_in: number;
}

/**
 * The real sign-in over HTTP: POST /auth/login, then POST /auth/mfa/verify with a TOTP code when MFA is enabled.
 * A TOTP step works once, so for a user who already signed in during this period the code of the next step (still
 * inside the accepted skew) is used, and the clock is moved on only when that is used up too.
 */
export async function login(
  sys: TestSystem,
  user: TestUser,
  opts: { userAgent?: string; remoteAddress?: string } = {},
): Promise<TokenPair> {
  const headers = opts.userAgent ? { 'user-agent': opts.userAgent } : {};
  const extra = opts.remoteAddress ? { remoteAddress: opts.remoteAddress } : {};
  const res = await sys.http({
    method: 'POST',
    url: '/api/v1/auth/login',
    payload: { email: user.email, password: user.password },
    headers,
    ...extra,
  });
  if (res.statusCode === 200) return (res.json() as { data: TokenPair }).data;
  if (res.statusCode !== 202) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  if (!user.totpSecret) throw new Error('login: MFA is required but the test user has no TOTP secret');
  const mfaToken = (res.json() as { data: { mfa_token: string } }).data.mfa_token;
  const orm = await sys.stores.orm();
  const rows = await orm.em
    .fork()
    .getConnection()
    .execute<{ step: string | null }[]>(`SELECT mfa_last_used_step AS step FROM users WHERE id = ?`, [user.id]);
  const last = rows[0]?.step === null || rows[0]?.step === undefined ? -1 : Number(rows[0].step);
  let current = Math.floor(sys.clock.now() / 30_000);
  if (last + 1 > current + 1) {
    sys.clock.advance((last - current) * 30_000);
    current = Math.floor(sys.clock.now() / 30_000);
  }
  const step = Math.max(current, last + 1);
  const code = totpCode(user.totpSecret, sys.clock, step * 30_000 + 1_000);
  const verify = await sys.http({
    method: 'POST',
    url: '/api/v1/auth/mfa/verify',
    payload: { mfa_token: mfaToken, code },
    headers,
    ...extra,
  });
  if (verify.statusCode !== 200) throw new Error(`mfa verify failed: ${verify.statusCode} ${verify.body}`);
  return (verify.json() as { data: TokenPair }).data;
}

export interface StoredAuditEntry {
  details: Record<string, unknown>;
  actor_id: string | null;
  ip_address: string | null;
}

/** Audit entries are stored by a stream consumer: waits for the newest one with this resource id and action. */
export async function waitForAuditRow(sys: TestSystem, resourceId: string, action: string): Promise<StoredAuditEntry> {
  for (let i = 0; i < 100; i += 1) {
    const rows = await sys.sql<StoredAuditEntry>(
      `SELECT details, actor_id, ip_address FROM audit_log WHERE resource_id = ? AND action = ? ORDER BY created_at DESC LIMIT 1`,
      [resourceId, action],
    );
    if (rows[0]) return rows[0];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no audit entry ${action} for ${resourceId}`);
}
