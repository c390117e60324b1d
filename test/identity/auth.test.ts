import type { LightMyRequestResponse } from 'fastify';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createUser,
  login,
  tokenFor,
  totpCode,
  waitForAuditRow,
  type TestUser,
  type TokenPair,
} from '../support/identity.ts';
import { errorOf, startTestSystem, type TestSystem } from '../support/system.ts';

const CHROME_MAC =
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const FIREFOX_LINUX = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem();
});

afterAll(async () => {
  await sys?.stop();
});

const post = (
  url: string,
  payload: object,
  extra: { token?: string; headers?: Record<string, string>; remoteAddress?: string } = {},
): Promise<LightMyRequestResponse> => sys.http({ method: 'POST', url, payload, ...extra });
const loginReq = (
  email: string,
  password: string,
  extra: { headers?: Record<string, string>; remoteAddress?: string } = {},
): Promise<LightMyRequestResponse> => post('/api/v1/auth/login', { email, password }, extra);
const refreshReq = (refresh_token: string): Promise<LightMyRequestResponse> =>
  post('/api/v1/auth/refresh', { refresh_token });

function expectTokenResponse(res: LightMyRequestResponse): TokenPair {
  expect(res.statusCode, res.body).toBe(200);
  const data = (res.json() as { data: TokenPair }).data;
  expect(data.token_type).toBe('Bearer');
  expect(data.expires_in).toBe(900);
  expect(data.session_id).toMatch(/^[0-9a-f-]{36}$/);
  expect(data.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  expect(data.access_token.split('.')).toHaveLength(3);
  return data;
}

describe('login', () => {
  it('signs a user without MFA in with 200 and a token response, records the session, last_login_at and an audit entry', async () => {
    const user = await createUser(sys, { mfa: false });
    const res = await loginReq(user.email.toUpperCase(), user.password, {
      headers: { 'user-agent': CHROME_MAC },
      remoteAddress: '10.1.2.3',
    });
    const tokens = expectTokenResponse(res);
    const [session] = await sys.sql<{
      user_id: string;
      ip_address: string;
      user_agent: string;
      device_label: string;
      is_revoked: boolean;
      expires_at: Date;
      created_at: Date;
    }>(
      `SELECT user_id, ip_address, user_agent, device_label, is_revoked, expires_at, created_at FROM sessions WHERE id = ?`,
      [tokens.session_id],
    );
    expect(session).toMatchObject({
      user_id: user.id,
      ip_address: '10.1.2.3',
      user_agent: CHROME_MAC,
      device_label: 'Chrome on macOS',
      is_revoked: false,
    });
    expect(new Date(session!.expires_at).getTime() - new Date(session!.created_at).getTime()).toBe(604_800_000);
    const [row] = await sys.sql<{ last_login_at: Date | null }>(`SELECT last_login_at FROM users WHERE id = ?`, [
      user.id,
    ]);
    expect(new Date(row!.last_login_at!).getTime()).toBe(sys.clock.now());
    const refreshRows = await sys.sql<{ token_hash: string }>(
      `SELECT token_hash FROM refresh_tokens WHERE session_id = ?`,
      [tokens.session_id],
    );
    expect(refreshRows).toHaveLength(1);
    expect(refreshRows[0]!.token_hash).not.toBe(tokens.refresh_token);
    const audit = await waitForAuditRow(sys, user.id, 'user.login');
    expect(audit.actor_id).toBe(user.id);
    expect(audit.ip_address).toBe('10.1.2.3');
  });

  it('answers 202 with a single-use uuid challenge when MFA is enabled, then 200 tokens at /auth/mfa/verify', async () => {
    const user = await createUser(sys);
    const res = await loginReq(user.email, user.password);
    expect(res.statusCode).toBe(202);
    const challenge = (res.json() as { data: { mfa_required: boolean; mfa_token: string } }).data;
    expect(challenge.mfa_required).toBe(true);
    expect(challenge.mfa_token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(Object.keys(challenge).sort()).toEqual(['mfa_required', 'mfa_token']);
    const verify = await post('/api/v1/auth/mfa/verify', {
      mfa_token: challenge.mfa_token,
      code: totpCode(user.totpSecret!, sys.clock),
    });
    const tokens = expectTokenResponse(verify);
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token: tokens.access_token });
    expect(me.statusCode).toBe(200);
    // The challenge is spent.
    sys.clock.advance(30_000);
    const again = await post('/api/v1/auth/mfa/verify', {
      mfa_token: challenge.mfa_token,
      code: totpCode(user.totpSecret!, sys.clock),
    });
    expect(again.statusCode).toBe(401);
  });

  it('gives the same 401 for an unknown e-mail, a wrong password, an invited and a disabled account', async () => {
    const user = await createUser(sys, { mfa: false });
    const invited = await createUser(sys, { mfa: false, status: 'invited' });
    const disabled = await createUser(sys, { mfa: false, status: 'disabled' });
    const answers = [
      await loginReq(`nobody-${sys.tag}@example.com`, 'whatever password 1'),
      await loginReq(user.email, 'wrong password here'),
      await loginReq(invited.email, invited.password),
      await loginReq(disabled.email, disabled.password),
    ];
    for (const res of answers) {
      expect(res.statusCode).toBe(401);
      expect(errorOf(res)).toEqual({
        code: 'unauthorized',
        message: 'invalid e-mail or password',
        request_id: expect.any(String),
      });
    }
  });

  it('spends the same password-hash time on an unknown e-mail as on a wrong password', async () => {
    const user = await createUser(sys, { mfa: false });
    const time = async (email: string): Promise<number> => {
      const started = performance.now();
      const res = await loginReq(email, 'not the password at all');
      expect(res.statusCode).toBe(401);
      return performance.now() - started;
    };
    // Warm both paths (the dummy hash is computed once).
    await time(`warm-${sys.tag}@example.com`);
    let unknown = 0;
    let wrong = 0;
    for (let i = 0; i < 3; i += 1) {
      unknown += await time(`ghost-${i}-${sys.tag}@example.com`);
      wrong += await time(user.email);
    }
    // Without the dummy verification an unknown e-mail answers in a few ms against tens of ms for a real hash.
    expect(unknown).toBeGreaterThan(wrong * 0.4);
    // Three failures each on different e-mails: not locked.
    const ok = await loginReq(user.email, user.password);
    expect(ok.statusCode).toBe(200);
  });

  it('rejects malformed bodies with a 400 naming the field', async () => {
    const res = await post('/api/v1/auth/login', { email: 'a@example.com' });
    expect(res.statusCode).toBe(400);
    expect(errorOf(res).message).toContain('password');
  });
});

describe('progressive lockout', () => {
  const fail = async (user: TestUser, n: number): Promise<void> => {
    for (let i = 0; i < n; i += 1) {
      const res = await loginReq(user.email, `wrong password ${i}`);
      expect(res.statusCode, `failure ${i + 1}`).toBe(401);
    }
  };
  const expectLocked = async (user: TestUser, seconds: number, password = user.password): Promise<void> => {
    const res = await loginReq(user.email, password);
    expect(res.statusCode).toBe(429);
    expect(errorOf(res).code).toBe('too_many_requests');
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(seconds - 2);
    expect(retryAfter).toBeLessThanOrEqual(seconds);
  };

  it('locks 1 minute at 5 failures, 5 at 10, 15 at 15, 1 hour at 20, even for the right password; success resets', async () => {
    const user = await createUser(sys, { mfa: false });
    await fail(user, 4);
    // Below the threshold nothing is locked.
    sys.clock.advance(1_000);
    await fail(user, 1);
    await expectLocked(user, 60);
    sys.clock.advance(59_000);
    await expectLocked(user, 1);
    sys.clock.advance(1_500);
    // Failures 6..9 lock for a minute each, the 10th for 5 minutes.
    for (let k = 6; k <= 9; k += 1) {
      await fail(user, 1);
      await expectLocked(user, 60);
      sys.clock.advance(61_000);
    }
    await fail(user, 1);
    await expectLocked(user, 300);
    sys.clock.advance(301_000);
    for (let k = 11; k <= 14; k += 1) {
      await fail(user, 1);
      await expectLocked(user, 300);
      sys.clock.advance(301_000);
    }
    await fail(user, 1);
    await expectLocked(user, 900);
    sys.clock.advance(901_000);
    for (let k = 16; k <= 19; k += 1) {
      await fail(user, 1);
      await expectLocked(user, 900);
      sys.clock.advance(901_000);
    }
    await fail(user, 1);
    await expectLocked(user, 3600);
    sys.clock.advance(3_601_000);
    await fail(user, 1);
    await expectLocked(user, 3600);
    sys.clock.advance(3_601_000);
    // The right password after the lock: signed in, and the counter starts over.
    expect((await loginReq(user.email, user.password)).statusCode).toBe(200);
    await fail(user, 4);
    expect((await loginReq(user.email, user.password)).statusCode).toBe(200);
    await fail(user, 4);
  });

  it('counts per e-mail, case-insensitively', async () => {
    const user = await createUser(sys, { mfa: false });
    const other = await createUser(sys, { mfa: false });
    for (let i = 0; i < 5; i += 1)
      expect((await loginReq(i % 2 ? user.email.toUpperCase() : user.email, 'nope nope nope')).statusCode).toBe(401);
    await expectLocked(user, 60);
    expect((await loginReq(other.email, other.password)).statusCode).toBe(200);
    sys.clock.advance(61_000);
  });

  it('does not let parallel wrong passwords slip past the lockout, and racers do not push the count ahead', async () => {
    const user = await createUser(sys, { mfa: false });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => loginReq(user.email, `parallel wrong ${i}`)),
    );
    const statuses = results.map((r) => r.statusCode);
    // At most five hash checks ran (the five 401s); everyone else was refused before the check.
    expect(statuses.filter((s) => s === 401)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    for (const r of results.filter((x) => x.statusCode === 429))
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    // Locked now, even with the right password.
    await expectLocked(user, 60);
    sys.clock.advance(61_000);
    // Only 5 failures counted, not 20: the next failure locks for 1 minute (the 6th), not 1 hour (the 21st).
    const res = await loginReq(user.email, 'one more wrong');
    expect(res.statusCode).toBe(401);
    await expectLocked(user, 60);
    sys.clock.advance(61_000);
    // After a lock only one attempt may run at a time: of 10 parallel wrong ones, one is checked.
    const second = await Promise.all(Array.from({ length: 10 }, (_, i) => loginReq(user.email, `second wave ${i}`)));
    expect(second.filter((r) => r.statusCode === 401)).toHaveLength(1);
    expect(second.filter((r) => r.statusCode === 429)).toHaveLength(9);
    await expectLocked(user, 60);
    sys.clock.advance(61_000);
    expect((await loginReq(user.email, user.password)).statusCode).toBe(200);
  });
});

describe('refresh tokens', () => {
  it('rotates on every refresh; presenting a rotated token revokes the session, so the newest token fails too', async () => {
    const user = await createUser(sys);
    const first = await login(sys, user);
    sys.clock.advance(60_000);
    const second = expectTokenResponse(await refreshReq(first.refresh_token));
    expect(second.session_id).toBe(first.session_id);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const [row] = await sys.sql<{ last_active_at: Date; expires_at: Date }>(
      `SELECT last_active_at, expires_at FROM sessions WHERE id = ?`,
      [first.session_id],
    );
    expect(new Date(row!.last_active_at).getTime()).toBe(sys.clock.now());
    expect(new Date(row!.expires_at).getTime()).toBe(sys.clock.now() + 604_800_000);
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token: second.access_token });
    expect(me.statusCode).toBe(200);
    const third = expectTokenResponse(await refreshReq(second.refresh_token));

    // Replay of an already rotated token.
    const replay = await refreshReq(first.refresh_token);
    expect(replay.statusCode).toBe(401);
    expect(errorOf(replay).code).toBe('unauthorized');
    const [session] = await sys.sql<{ is_revoked: boolean; revoked_reason: string }>(
      `SELECT is_revoked, revoked_reason FROM sessions WHERE id = ?`,
      [first.session_id],
    );
    expect(session).toEqual({ is_revoked: true, revoked_reason: 'refresh_token_reuse' });
    expect((await refreshReq(third.refresh_token)).statusCode).toBe(401);
    await waitForAuditRow(sys, first.session_id, 'session.revoked');
  });

  it('refuses unknown tokens, expired sessions and disabled users', async () => {
    expect((await refreshReq('A'.repeat(43))).statusCode).toBe(401);
    expect((await refreshReq('')).statusCode).toBe(400);

    const user = await createUser(sys);
    const tokens = await login(sys, user);
    sys.clock.advance(604_800_000 + 1_000);
    expect((await refreshReq(tokens.refresh_token)).statusCode).toBe(401);

    const other = await createUser(sys);
    const t2 = await login(sys, other);
    await sys.sql(`UPDATE users SET status = 'disabled' WHERE id = ?`, [other.id]);
    expect((await refreshReq(t2.refresh_token)).statusCode).toBe(401);
  });

  it('lets only one of two parallel refreshes with the same token through', async () => {
    const user = await createUser(sys);
    const tokens = await login(sys, user);
    const [a, b] = await Promise.all([refreshReq(tokens.refresh_token), refreshReq(tokens.refresh_token)]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 401]);
  });
});

describe('sessions', () => {
  it('lists live sessions with device labels, revokes one (owner only) and all', async () => {
    const user = await createUser(sys);
    const other = await createUser(sys);
    const s1 = await login(sys, user, { userAgent: CHROME_MAC, remoteAddress: '10.0.0.1' });
    const s2 = await login(sys, user, { userAgent: FIREFOX_LINUX, remoteAddress: '10.0.0.2' });
    const s3 = await login(sys, user);
    const otherTokens = await login(sys, other);

    const list = await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token: s1.access_token });
    expect(list.statusCode).toBe(200);
    const sessions = (list.json() as { data: Record<string, unknown>[] }).data;
    expect(sessions.map((s) => s.id).sort()).toEqual([s1.session_id, s2.session_id, s3.session_id].sort());
    const first = sessions.find((s) => s.id === s1.session_id)!;
    expect(first).toMatchObject({
      user_id: user.id,
      ip_address: '10.0.0.1',
      user_agent: CHROME_MAC,
      device_label: 'Chrome on macOS',
      is_revoked: false,
      is_current: true,
    });
    expect(first.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(first.last_active_at).toEqual(expect.any(String));
    expect(first.expires_at).toEqual(expect.any(String));
    expect(sessions.find((s) => s.id === s2.session_id)).toMatchObject({
      device_label: 'Firefox on Linux',
      is_current: false,
    });

    // Another user's session: 404, and it stays alive.
    const foreign = await sys.http({
      method: 'DELETE',
      url: `/api/v1/auth/sessions/${otherTokens.session_id}`,
      token: s1.access_token,
    });
    expect(foreign.statusCode).toBe(404);
    expect((await refreshReq(otherTokens.refresh_token)).statusCode).toBe(200);
    expect(
      (await sys.http({ method: 'DELETE', url: '/api/v1/auth/sessions/not-a-uuid', token: s1.access_token }))
        .statusCode,
    ).toBe(400);

    const revoke = await sys.http({
      method: 'DELETE',
      url: `/api/v1/auth/sessions/${s2.session_id}`,
      token: s1.access_token,
    });
    expect(revoke.statusCode).toBe(200);
    expect((await refreshReq(s2.refresh_token)).statusCode).toBe(401);
    const after = (await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token: s1.access_token })).json() as {
      data: { id: string }[];
    };
    expect(after.data.map((s) => s.id).sort()).toEqual([s1.session_id, s3.session_id].sort());

    const all = await sys.http({ method: 'DELETE', url: '/api/v1/auth/sessions', token: s1.access_token });
    expect(all.statusCode).toBe(200);
    expect((all.json() as { data: { revoked: number } }).data.revoked).toBe(2);
    expect((await refreshReq(s1.refresh_token)).statusCode).toBe(401);
    expect((await refreshReq(s3.refresh_token)).statusCode).toBe(401);
    // Access tokens already issued stay valid until they expire (spec): the list is now empty.
    const empty = (await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token: s1.access_token })).json() as {
      data: unknown[];
    };
    expect(empty.data).toEqual([]);
  });

  it('hides expired sessions from the list', async () => {
    const user = await createUser(sys);
    const token = await tokenFor(sys, user);
    const tokens = await login(sys, user);
    const before = (await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token })).json() as {
      data: { id: string }[];
    };
    expect(before.data.map((s) => s.id)).toContain(tokens.session_id);
    await sys.sql(`UPDATE sessions SET expires_at = ? WHERE id = ?`, [
      new Date(sys.clock.now() - 1000),
      tokens.session_id,
    ]);
    const after = (await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token })).json() as {
      data: { id: string }[];
    };
    expect(after.data.map((s) => s.id)).not.toContain(tokens.session_id);
  });

  it('logs out the session of a refresh token, only when it is the caller’s', async () => {
    const user = await createUser(sys);
    const other = await createUser(sys);
    const mine = await login(sys, user);
    const theirs = await login(sys, other);
    const wrong = await post(
      '/api/v1/auth/logout',
      { refresh_token: theirs.refresh_token },
      { token: mine.access_token },
    );
    expect(wrong.statusCode).toBe(200);
    expect((await refreshReq(theirs.refresh_token)).statusCode).toBe(200);

    const res = await post('/api/v1/auth/logout', { refresh_token: mine.refresh_token }, { token: mine.access_token });
    expect(res.statusCode).toBe(200);
    expect((await refreshReq(mine.refresh_token)).statusCode).toBe(401);
    const [row] = await sys.sql<{ is_revoked: boolean; revoked_reason: string }>(
      `SELECT is_revoked, revoked_reason FROM sessions WHERE id = ?`,
      [mine.session_id],
    );
    expect(row).toEqual({ is_revoked: true, revoked_reason: 'logout' });
    expect((await post('/api/v1/auth/logout', { refresh_token: mine.refresh_token })).statusCode).toBe(401);
  });
});

describe('me and mandatory MFA', () => {
  it('answers /auth/me with the user and client access; other routes need MFA enrolled', async () => {
    const user = await createUser(sys, { mfa: false, displayName: 'Ada Lovelace' });
    const tokens = expectTokenResponse(await loginReq(user.email, user.password));
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token: tokens.access_token });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toEqual({
      data: {
        user: {
          id: user.id,
          email: user.email,
          display_name: 'Ada Lovelace',
          mfa_enabled: false,
          status: 'active',
          is_super_admin: false,
        },
        client_access: {},
      },
    });
    const sessions = await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token: tokens.access_token });
    expect(sessions.statusCode).toBe(403);
    expect(errorOf(sessions).code).toBe('mfa_enrollment_required');
    expect((await sys.http({ method: 'GET', url: '/api/v1/auth/me' })).statusCode).toBe(401);
  });
});

describe('access tokens', () => {
  const me = (token: string): Promise<LightMyRequestResponse> =>
    sys.http({ method: 'GET', url: '/api/v1/auth/me', token });

  it('expire after SVC_JWT_ACCESS_TTL (900 s by default): 401 from then on, and refresh gives a working one', async () => {
    const user = await createUser(sys);
    const tokens = await login(sys, user);
    sys.clock.advance(899_000);
    expect((await me(tokens.access_token)).statusCode).toBe(200);
    sys.clock.advance(2_000);
    const expired = await me(tokens.access_token);
    expect(expired.statusCode).toBe(401);
    expect(errorOf(expired)).toMatchObject({ code: 'unauthorized', message: 'token expired' });
    const fresh = expectTokenResponse(await refreshReq(tokens.refresh_token));
    expect((await me(fresh.access_token)).statusCode).toBe(200);
  });

  it('refuses a token that is not an HS256 access token signed with the secret', async () => {
    const user = await createUser(sys);
    const token = await tokenFor(sys, user);
    const [header, payload] = token.split('.') as [string, string, string];
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: randomUUID() })).toString('base64url')}.${token.split('.')[2]}`;
    const signature = token.split('.')[2]!;
    const resigned = `${header}.${payload}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    // The genuine token is verified first, so it is kept as verified: its variants must still be checked on their own.
    expect((await me(token)).statusCode).toBe(200);
    for (const bad of [unsigned, tampered, resigned, `${token}x`, 'not-a-jwt']) {
      const res = await me(bad);
      expect(res.statusCode, bad).toBe(401);
      expect(errorOf(res).code).toBe('unauthorized');
    }
    expect(
      (await sys.http({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Basic ${token}` } }))
        .statusCode,
    ).toBe(401);
  });
});
