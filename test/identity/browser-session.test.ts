import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, totpCode, type TestUser } from '../support/identity.ts';
import { errorOf, startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The web console's sessions (docs/api/identity.md#browser-sessions): the refresh token only in an httpOnly,
 * SameSite=Strict cookie on its own path, refresh and sign-out guarded by the CSRF double submit; the JSON routes of
 * API clients unchanged beside them.
 */
let sys: TestSystem;
beforeAll(async () => {
  sys = await startTestSystem();
});
afterAll(async () => {
  await sys?.stop();
});

interface Cookie {
  name: string;
  value: string;
  attrs: string[];
}
function cookiesOf(res: LightMyRequestResponse): Map<string, Cookie> {
  const raw = res.headers['set-cookie'];
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const out = new Map<string, Cookie>();
  for (const line of list) {
    const [pair, ...attrs] = line.split(';').map((p) => p.trim());
    const eq = pair!.indexOf('=');
    out.set(pair!.slice(0, eq), { name: pair!.slice(0, eq), value: pair!.slice(eq + 1), attrs });
  }
  return out;
}
const jar = (c: Map<string, Cookie>): string => [...c.values()].map((k) => `${k.name}=${k.value}`).join('; ');

async function browserSignIn(user: TestUser): Promise<{ res: LightMyRequestResponse; cookies: Map<string, Cookie> }> {
  const login = await sys.http({
    method: 'POST',
    url: '/api/v1/auth/browser/login',
    payload: { email: user.email, password: user.password },
  });
  expect(login.statusCode, login.body).toBe(202);
  const { mfa_token } = login.json().data as { mfa_token: string };
  expect(login.headers['set-cookie']).toBeUndefined();
  const res = await sys.http({
    method: 'POST',
    url: '/api/v1/auth/browser/mfa/verify',
    payload: { mfa_token, code: totpCode(user.totpSecret!, sys.clock) },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { res, cookies: cookiesOf(res) };
}

const refresh = (cookie: string | undefined, csrf: string | undefined): Promise<LightMyRequestResponse> =>
  sys.http({
    method: 'POST',
    url: '/api/v1/auth/browser/refresh',
    headers: { ...(cookie ? { cookie } : {}), ...(csrf ? { 'x-csrf-token': csrf } : {}) },
  });

describe('browser sessions', () => {
  it('sign-in answers the access token without the refresh token, which goes into an httpOnly cookie', async () => {
    const user = await createUser(sys);
    const { res, cookies } = await browserSignIn(user);
    const data = res.json().data as Record<string, unknown>;
    expect(Object.keys(data).sort()).toEqual(['access_token', 'expires_in', 'session_id', 'token_type']);
    expect(res.body).not.toContain(cookies.get('svc_refresh')!.value);
    const refreshCookie = cookies.get('svc_refresh')!;
    expect(refreshCookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(refreshCookie.attrs).toEqual(
      expect.arrayContaining(['Path=/api/v1/auth/browser', 'HttpOnly', 'SameSite=Strict', 'Max-Age=604800']),
    );
    // Plain http here (SVC_BACKEND_URL): Secure only over https.
    expect(refreshCookie.attrs).not.toContain('Secure');
    const csrf = cookies.get('svc_csrf')!;
    expect(csrf.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(csrf.attrs).toEqual(expect.arrayContaining(['Path=/', 'SameSite=Strict']));
    expect(csrf.attrs).not.toContain('HttpOnly');
    expect(res.headers['cache-control']).toBe('no-store');
    const me = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token: data.access_token as string });
    expect(me.statusCode).toBe(200);
  });

  it('refresh rotates the cookie with the CSRF header, and refuses without it or with another value', async () => {
    const user = await createUser(sys);
    const { cookies } = await browserSignIn(user);
    const csrf = cookies.get('svc_csrf')!.value;
    for (const [cookie, header, why] of [
      [jar(cookies), undefined, 'no header'],
      [jar(cookies), 'x'.repeat(43), 'another value'],
      [`svc_refresh=${cookies.get('svc_refresh')!.value}`, csrf, 'no CSRF cookie'],
      [`svc_csrf=${csrf}`, csrf, 'no refresh cookie'],
    ] as const) {
      const res = await refresh(cookie, header);
      expect(res.statusCode, why).toBe(401);
      expect(errorOf(res).code, why).toBe('unauthorized');
    }
    const ok = await refresh(jar(cookies), csrf);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json().data.refresh_token).toBeUndefined();
    const next = cookiesOf(ok);
    expect(next.get('svc_refresh')!.value).not.toBe(cookies.get('svc_refresh')!.value);
    expect(next.get('svc_csrf')!.value).not.toBe(csrf);
    // The rotated token presented again is reuse: the session is revoked, the new cookie with it.
    const reused = await refresh(jar(cookies), csrf);
    expect(reused.statusCode).toBe(401);
    expect((await refresh(jar(next), next.get('svc_csrf')!.value)).statusCode).toBe(401);
  });

  it('sign-out revokes the session and clears both cookies', async () => {
    const user = await createUser(sys);
    const { res, cookies } = await browserSignIn(user);
    const token = res.json().data.access_token as string;
    const csrf = cookies.get('svc_csrf')!.value;
    const noCsrf = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/browser/logout',
      token,
      headers: { cookie: jar(cookies) },
    });
    expect(noCsrf.statusCode).toBe(401);
    const out = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/browser/logout',
      token,
      headers: { cookie: jar(cookies), 'x-csrf-token': csrf },
    });
    expect(out.statusCode, out.body).toBe(200);
    const cleared = cookiesOf(out);
    expect(cleared.get('svc_refresh')).toMatchObject({ value: '' });
    expect(cleared.get('svc_refresh')!.attrs).toContain('Max-Age=0');
    expect(cleared.get('svc_csrf')!.attrs).toContain('Max-Age=0');
    expect((await refresh(jar(cookies), csrf)).statusCode).toBe(401);
  });

  it('a user without MFA gets the cookie at once; the JSON routes still answer the refresh token', async () => {
    const user = await createUser(sys, { mfa: false });
    const res = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/browser/login',
      payload: { email: user.email, password: user.password },
    });
    expect(res.statusCode).toBe(200);
    expect(cookiesOf(res).get('svc_refresh')).toBeDefined();
    const json = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email: user.email, password: user.password },
    });
    expect(json.statusCode).toBe(200);
    expect(json.json().data.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(json.headers['set-cookie']).toBeUndefined();
  });

  it('a wrong password is the same 401 as on the JSON route, with no cookie', async () => {
    const user = await createUser(sys);
    const res = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/browser/login',
      payload: { email: user.email, password: 'not the password at all' },
    });
    expect(res.statusCode).toBe(401);
    expect(res.headers['set-cookie']).toBeUndefined();
    const bad = await sys.http({ method: 'POST', url: '/api/v1/auth/browser/login', payload: { email: user.email } });
    expect(bad.statusCode).toBe(400);
  });
});
