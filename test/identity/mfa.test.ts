import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, login, totpCode, type TestUser, type TokenPair } from '../support/identity.ts';
import { errorOf, startTestSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;

beforeAll(async () => {
  sys = await startTestSystem();
});

afterAll(async () => {
  await sys?.stop();
});

const post = (url: string, payload: object, token?: string): Promise<LightMyRequestResponse> =>
  sys.http({ method: 'POST', url, payload, ...(token ? { token } : {}) });
const get = (url: string, token: string): Promise<LightMyRequestResponse> => sys.http({ method: 'GET', url, token });

/** Password step only: the MFA challenge token. */
async function challenge(user: TestUser): Promise<string> {
  const res = await post('/api/v1/auth/login', { email: user.email, password: user.password });
  expect(res.statusCode, res.body).toBe(202);
  return (res.json() as { data: { mfa_token: string } }).data.mfa_token;
}

const verify = (mfa_token: string, code: string): Promise<LightMyRequestResponse> =>
  post('/api/v1/auth/mfa/verify', { mfa_token, code });

/** Moves the clock to the start of the next TOTP period, so each step gets a fresh code. */
function nextPeriod(): void {
  sys.clock.advance(30_000 - (sys.clock.now() % 30_000) + 1_000);
}

interface Setup {
  secret: string;
  qr_code_uri: string;
  recovery_codes: string[];
}

/** Signs up an MFA-less user through setup + confirm; returns the secret and codes. */
async function enrol(token: string): Promise<Setup> {
  const res = await post('/api/v1/auth/mfa/setup', {}, token);
  expect(res.statusCode, res.body).toBe(200);
  const setup = (res.json() as { data: Setup }).data;
  const confirm = await post('/api/v1/auth/mfa/confirm', { code: totpCode(setup.secret, sys.clock) }, token);
  expect(confirm.statusCode, confirm.body).toBe(200);
  return setup;
}

describe('MFA enrolment', () => {
  it('sets up a secret, QR URI and 8 recovery codes; confirm enables MFA and opens the protected routes', async () => {
    const user = await createUser(sys, { mfa: false });
    const tokens = await login(sys, user);
    // Mandatory MFA: a protected route refuses, /auth/me answers.
    const before = await get('/api/v1/auth/sessions', tokens.access_token);
    expect(before.statusCode).toBe(403);
    expect(errorOf(before).code).toBe('mfa_enrollment_required');
    expect((await get('/api/v1/auth/me', tokens.access_token)).statusCode).toBe(200);

    const res = await post('/api/v1/auth/mfa/setup', {}, tokens.access_token);
    expect(res.statusCode).toBe(200);
    const setup = (res.json() as { data: Setup }).data;
    expect(setup.secret).toMatch(/^[A-Z2-7]{16,}$/);
    const uri = new URL(setup.qr_code_uri);
    expect(uri.protocol).toBe('otpauth:');
    expect(setup.qr_code_uri.startsWith('otpauth://totp/')).toBe(true);
    expect(uri.searchParams.get('secret')).toBe(setup.secret);
    expect(uri.searchParams.get('issuer')).toBeTruthy();
    expect(decodeURIComponent(uri.pathname)).toContain(user.email);
    expect(setup.recovery_codes).toHaveLength(8);
    for (const c of setup.recovery_codes) expect(c).toMatch(/^[0-9a-f]{4}-[0-9a-f]{4}$/);
    expect(new Set(setup.recovery_codes).size).toBe(8);
    // Nothing is stored on the user until confirmed.
    const [pendingRow] = await sys.sql<{ mfa_enabled: boolean; mfa_secret_enc: string | null }>(
      `SELECT mfa_enabled, mfa_secret_enc FROM users WHERE id = ?`,
      [user.id],
    );
    expect(pendingRow).toEqual({ mfa_enabled: false, mfa_secret_enc: null });

    const wrongCode = totpCode(setup.secret, sys.clock) === '000000' ? '111111' : '000000';
    const wrong = await post('/api/v1/auth/mfa/confirm', { code: wrongCode }, tokens.access_token);
    expect(wrong.statusCode).toBe(400);
    expect((await post('/api/v1/auth/mfa/confirm', { code: 'abc' }, tokens.access_token)).statusCode).toBe(400);

    const confirm = await post(
      '/api/v1/auth/mfa/confirm',
      { code: totpCode(setup.secret, sys.clock) },
      tokens.access_token,
    );
    expect(confirm.statusCode).toBe(200);
    expect(confirm.json()).toEqual({ data: { mfa_enabled: true } });

    // The access cache was dropped: the same access token passes the gate at once.
    expect((await get('/api/v1/auth/sessions', tokens.access_token)).statusCode).toBe(200);
    const me = (await get('/api/v1/auth/me', tokens.access_token)).json() as {
      data: { user: { mfa_enabled: boolean } };
    };
    expect(me.data.user.mfa_enabled).toBe(true);

    // Stored encrypted and hashed.
    const [row] = await sys.sql<{ mfa_enabled: boolean; mfa_secret_enc: string }>(
      `SELECT mfa_enabled, mfa_secret_enc FROM users WHERE id = ?`,
      [user.id],
    );
    expect(row!.mfa_enabled).toBe(true);
    expect(row!.mfa_secret_enc).not.toContain(setup.secret);
    const codes = await sys.sql<{ code_hash: string }>(`SELECT code_hash FROM mfa_recovery_codes WHERE user_id = ?`, [
      user.id,
    ]);
    expect(codes).toHaveLength(8);
    for (const c of codes) expect(setup.recovery_codes.map((r) => r.replace('-', ''))).not.toContain(c.code_hash);

    // Already enabled: a new setup is a conflict.
    const again = await post('/api/v1/auth/mfa/setup', {}, tokens.access_token);
    expect(again.statusCode).toBe(409);

    // From now on login needs the second factor, with the enrolled secret.
    nextPeriod();
    const mfaToken = await challenge(user);
    expect((await verify(mfaToken, totpCode(setup.secret, sys.clock))).statusCode).toBe(200);
  });

  it('forgets a pending setup after 10 minutes', async () => {
    const user = await createUser(sys, { mfa: false });
    const tokens = await login(sys, user);
    const setup = ((await post('/api/v1/auth/mfa/setup', {}, tokens.access_token)).json() as { data: Setup }).data;
    sys.clock.advance(10 * 60_000 + 1_000);
    const late = await post(
      '/api/v1/auth/mfa/confirm',
      { code: totpCode(setup.secret, sys.clock) },
      tokens.access_token,
    );
    expect(late.statusCode).toBe(400);
    expect(errorOf(late).message).toMatch(/setup/);
  });

  it('a new setup replaces the pending one', async () => {
    const user = await createUser(sys, { mfa: false });
    const tokens = await login(sys, user);
    const first = ((await post('/api/v1/auth/mfa/setup', {}, tokens.access_token)).json() as { data: Setup }).data;
    const second = ((await post('/api/v1/auth/mfa/setup', {}, tokens.access_token)).json() as { data: Setup }).data;
    expect(second.secret).not.toBe(first.secret);
    expect(
      (await post('/api/v1/auth/mfa/confirm', { code: totpCode(first.secret, sys.clock) }, tokens.access_token))
        .statusCode,
    ).toBe(400);
    expect(
      (await post('/api/v1/auth/mfa/confirm', { code: totpCode(second.secret, sys.clock) }, tokens.access_token))
        .statusCode,
    ).toBe(200);
  });

  it('removes MFA with the right password only; the user must enrol again', async () => {
    const user = await createUser(sys);
    const tokens = await login(sys, user);
    const wrong = await sys.http({
      method: 'DELETE',
      url: '/api/v1/auth/mfa',
      payload: { password: 'not my password!' },
      token: tokens.access_token,
    });
    expect(wrong.statusCode).toBe(400);
    expect(errorOf(wrong).message).toContain('password');
    const res = await sys.http({
      method: 'DELETE',
      url: '/api/v1/auth/mfa',
      payload: { password: user.password },
      token: tokens.access_token,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { mfa_enabled: false } });
    const [row] = await sys.sql<{ mfa_enabled: boolean; mfa_secret_enc: string | null }>(
      `SELECT mfa_enabled, mfa_secret_enc FROM users WHERE id = ?`,
      [user.id],
    );
    expect(row).toEqual({ mfa_enabled: false, mfa_secret_enc: null });
    expect(await sys.sql(`SELECT id FROM mfa_recovery_codes WHERE user_id = ?`, [user.id])).toHaveLength(0);
    const gate = await get('/api/v1/auth/sessions', tokens.access_token);
    expect(gate.statusCode).toBe(403);
    expect(errorOf(gate).code).toBe('mfa_enrollment_required');
    // Login goes straight to tokens now.
    expect((await post('/api/v1/auth/login', { email: user.email, password: user.password })).statusCode).toBe(200);
  });

  it('needs a signed-in user with MFA to remove it', async () => {
    const user = await createUser(sys, { mfa: false });
    const tokens = await login(sys, user);
    const res = await sys.http({
      method: 'DELETE',
      url: '/api/v1/auth/mfa',
      payload: { password: user.password },
      token: tokens.access_token,
    });
    expect(res.statusCode).toBe(403);
    expect(
      (await sys.http({ method: 'DELETE', url: '/api/v1/auth/mfa', payload: { password: user.password } })).statusCode,
    ).toBe(401);
  });
});

describe('MFA verification', () => {
  it('refuses a TOTP code already used in its window, accepts the next one', async () => {
    const user = await createUser(sys);
    nextPeriod();
    const code = totpCode(user.totpSecret!, sys.clock);
    expect((await verify(await challenge(user), code)).statusCode).toBe(200);
    const replay = await verify(await challenge(user), code);
    expect(replay.statusCode).toBe(401);
    expect(errorOf(replay).code).toBe('unauthorized');
    // The code of the previous step, still inside the skew, is refused too: steps only move forward.
    sys.clock.advance(30_000);
    expect((await verify(await challenge(user), code)).statusCode).toBe(401);
    expect((await verify(await challenge(user), totpCode(user.totpSecret!, sys.clock))).statusCode).toBe(200);
  });

  it('accepts a code of the neighbouring period (skew of one step), not two away', async () => {
    const user = await createUser(sys);
    nextPeriod();
    const prev = totpCode(user.totpSecret!, sys.clock, sys.clock.now() - 30_000);
    const twoAhead = totpCode(user.totpSecret!, sys.clock, sys.clock.now() + 60_000);
    expect((await verify(await challenge(user), twoAhead)).statusCode).toBe(401);
    expect((await verify(await challenge(user), prev)).statusCode).toBe(200);
  });

  it('accepts each recovery code once, without hyphen and in any case', async () => {
    const user = await createUser(sys, { mfa: false });
    const tokens = await login(sys, user);
    const setup = await enrol(tokens.access_token);
    const [a, b] = setup.recovery_codes as [string, string];
    const viaA = await verify(await challenge(user), a.replace('-', '').toUpperCase());
    expect(viaA.statusCode, viaA.body).toBe(200);
    expect((await verify(await challenge(user), a)).statusCode).toBe(401);
    expect((await verify(await challenge(user), b)).statusCode).toBe(200);
    const used = await sys.sql<{ n: string }>(
      `SELECT count(*) AS n FROM mfa_recovery_codes WHERE user_id = ? AND used_at IS NOT NULL`,
      [user.id],
    );
    expect(Number(used[0]!.n)).toBe(2);
  });

  it('answers 401 for unknown, expired and spent MFA tokens', async () => {
    const user = await createUser(sys);
    nextPeriod();
    expect(
      (await verify('8a6e0804-2bd0-4672-b79e-d46cb1c1e6a1', totpCode(user.totpSecret!, sys.clock))).statusCode,
    ).toBe(401);
    expect((await verify('not-a-uuid', '123456')).statusCode).toBe(401);
    const stale = await challenge(user);
    sys.clock.advance(5 * 60_000 + 1_000);
    expect((await verify(stale, totpCode(user.totpSecret!, sys.clock))).statusCode).toBe(401);
    expect((await post('/api/v1/auth/mfa/verify', { mfa_token: stale })).statusCode).toBe(400);
  });

  it('locks MFA verification on its own per-user counter; a challenge dies after 5 wrong codes', async () => {
    const user = await createUser(sys);
    nextPeriod();
    const good = (): string => totpCode(user.totpSecret!, sys.clock);
    const bad = (): string => (good() === '000000' ? '111111' : '000000');
    const token = await challenge(user);
    for (let i = 0; i < 5; i += 1) {
      const res = await verify(token, bad());
      expect(res.statusCode, `attempt ${i + 1}`).toBe(401);
    }
    // Exhausted challenge (and a locked user).
    expect((await verify(token, good())).statusCode).toBe(401);
    // The password lockout is separate: login itself still works, but verification is locked for a minute.
    const fresh = await challenge(user);
    const locked = await verify(fresh, good());
    expect(locked.statusCode).toBe(429);
    const retryAfter = Number(locked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(58);
    expect(retryAfter).toBeLessThanOrEqual(60);
    sys.clock.advance(61_000);
    const ok = await verify(fresh, good());
    expect(ok.statusCode, ok.body).toBe(200);
  });

  it('lets at most five parallel wrong codes be checked', async () => {
    const user = await createUser(sys);
    nextPeriod();
    const good = totpCode(user.totpSecret!, sys.clock);
    const bad = good === '000000' ? '111111' : '000000';
    const tokens = await Promise.all(Array.from({ length: 4 }, () => challenge(user)));
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => verify(tokens[i % 4]!, bad)));
    expect(results.filter((r) => r.statusCode === 401)).toHaveLength(5);
    expect(results.filter((r) => r.statusCode === 429)).toHaveLength(7);
  });
});

describe('login helper', () => {
  it('signs in twice in one TOTP period', async () => {
    const user = await createUser(sys);
    const a: TokenPair = await login(sys, user);
    const b: TokenPair = await login(sys, user);
    expect(a.session_id).not.toBe(b.session_id);
  });
});
