import { createHash, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { generateSync } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, waitForAuditRow, type TestUser } from '../support/identity.ts';
import { startOidcProvider, walkProvider, type TestAccount, type TestOidcProvider } from '../support/oidc-provider.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

const CLIENT_ID = 'console-sso-test';
const CLIENT_SECRET = 'console-sso-test-secret-0123456789';
const FRONTEND = 'http://frontend.test';
const CALLBACK_PATH = '/api/v1/auth/sso/callback';
const FRONTEND_CALLBACK = `${FRONTEND}/auth/sso/callback`;

const sha256 = (v: string): string => createHash('sha256').update(v).digest('hex');

interface UserRow {
  id: string;
  email: string;
  status: string;
  password_hash: string | null;
  mfa_enabled: boolean;
  auth_provider: string | null;
  auth_provider_id: string | null;
}

const userByEmail = async (sys: TestSystem, email: string): Promise<UserRow | undefined> =>
  (
    await sys.sql<UserRow>(
      `SELECT id, email, status, password_hash, mfa_enabled, auth_provider, auth_provider_id FROM users WHERE lower(email) = lower(?)`,
      [email],
    )
  )[0];
const userById = async (sys: TestSystem, id: string): Promise<UserRow | undefined> =>
  (
    await sys.sql<UserRow>(
      `SELECT id, email, status, password_hash, mfa_enabled, auth_provider, auth_provider_id FROM users WHERE id = ?`,
      [id],
    )
  )[0];

function cookieOf(res: LightMyRequestResponse, name: string): { value: string; attributes: string } | undefined {
  const raw = res.headers['set-cookie'];
  const lines = Array.isArray(raw) ? raw : raw ? [raw] : [];
  for (const line of lines) {
    const [pair, ...attrs] = line.split(';');
    const eq = pair!.indexOf('=');
    if (pair!.slice(0, eq) === name)
      return { value: pair!.slice(eq + 1), attributes: attrs.map((a) => a.trim()).join('; ') };
  }
  return undefined;
}

interface Flow {
  /** The provider authorization URL our start route redirected to. */
  authorize: URL;
  /** Value of the browser-binding cookie. */
  binding: string;
  state: string;
  /** Path and query of the callback the provider sent the browser to. */
  callback: string;
}

/** GET /api/v1/auth/sso, then through the provider's pages as a browser, up to (not into) our callback. */
async function startFlow(
  sys: TestSystem,
  provider: TestOidcProvider,
  account: TestAccount | { error: string },
): Promise<Flow> {
  if ('error' in account) provider.failNextWith(account.error);
  else provider.signInAs(account);
  const start = await sys.http({ method: 'GET', url: '/api/v1/auth/sso' });
  expect(start.statusCode).toBe(307);
  const authorize = new URL(String(start.headers.location));
  expect(authorize.origin).toBe(provider.issuer);
  const binding = cookieOf(start, 'svc_sso_binding');
  expect(binding?.value).toBeTruthy();
  const back = await walkProvider(authorize.toString(), `${sys.config.SVC_BACKEND_URL}${CALLBACK_PATH}`);
  return {
    authorize,
    binding: binding!.value,
    state: authorize.searchParams.get('state')!,
    callback: back.pathname + back.search,
  };
}

/** Our callback, as the browser calls it (with the binding cookie unless told otherwise); returns where it sends the browser. */
async function finishFlow(
  sys: TestSystem,
  flow: Flow,
  cookie: string | null = `svc_sso_binding=${flow.binding}`,
): Promise<{ res: LightMyRequestResponse; to: URL }> {
  const res = await sys.http({ method: 'GET', url: flow.callback, headers: cookie ? { cookie } : {} });
  expect(res.statusCode).toBe(307);
  const to = new URL(String(res.headers.location));
  expect(`${to.origin}${to.pathname}`).toBe(FRONTEND_CALLBACK);
  return { res, to };
}

async function signIn(
  sys: TestSystem,
  provider: TestOidcProvider,
  account: TestAccount | { error: string },
): Promise<URL> {
  return (await finishFlow(sys, await startFlow(sys, provider, account))).to;
}

interface Tokens {
  access_token: string;
  refresh_token: string;
  session_id: string;
  token_type: string;
  expires_in: number;
}

async function exchange(sys: TestSystem, code: string): Promise<LightMyRequestResponse> {
  return sys.http({ method: 'POST', url: '/api/v1/auth/sso/exchange', payload: { code } });
}

async function signInForTokens(sys: TestSystem, provider: TestOidcProvider, account: TestAccount): Promise<Tokens> {
  const to = await signIn(sys, provider, account);
  expect(to.searchParams.get('error')).toBeNull();
  const code = to.searchParams.get('code');
  expect(code).toBeTruthy();
  const res = await exchange(sys, code!);
  expect(res.statusCode).toBe(200);
  return (res.json() as { data: Tokens }).data;
}

async function me(
  sys: TestSystem,
  token: string,
): Promise<{ id: string; email: string; mfa_enabled: boolean; status: string }> {
  const res = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token });
  expect(res.statusCode).toBe(200);
  return (res.json() as { data: { user: { id: string; email: string; mfa_enabled: boolean; status: string } } }).data
    .user;
}

describe('SSO not configured', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ SVC_SSO_CLIENT_ID: '' });
  });
  afterAll(async () => {
    await sys?.stop();
  });

  it('reports sso_enabled false', async () => {
    const res = await sys.http({ method: 'GET', url: '/api/v1/auth/config' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: { sso_enabled: false } });
  });

  it('has no SSO routes', async () => {
    for (const [method, url] of [
      ['GET', '/api/v1/auth/sso'],
      ['GET', `${CALLBACK_PATH}?code=a&state=b`],
      ['POST', '/api/v1/auth/sso/exchange'],
    ] as const) {
      const res = await sys.http({ method, url, ...(method === 'POST' ? { payload: { code: 'x' } } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect((res.json() as { error: { code: string } }).error.code).toBe('not_found');
    }
  });
});

describe('SSO with an allowed domain', () => {
  const run = randomUUID().slice(0, 8);
  const domain = `corp-${run}.test`;
  const backend = 'http://backend.test';
  let provider: TestOidcProvider;
  let sys: TestSystem;
  const account = (over: Partial<TestAccount> = {}): TestAccount => {
    const id = randomUUID().slice(0, 8);
    return {
      sub: `sub-${run}-${id}`,
      email: `sso-${id}@${domain}`,
      email_verified: true,
      hd: domain,
      name: `Person ${id}`,
      ...over,
    };
  };

  beforeAll(async () => {
    // Down at first: the system must start anyway and discover the provider on first use.
    provider = await startOidcProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: `${backend}${CALLBACK_PATH}`,
      available: false,
    });
    sys = await startTestSystem({
      SVC_SSO_CLIENT_ID: CLIENT_ID,
      SVC_SSO_CLIENT_SECRET: CLIENT_SECRET,
      SVC_SSO_ISSUER_URL: provider.issuer,
      SVC_SSO_ALLOWED_DOMAIN: domain,
      SVC_BACKEND_URL: backend,
      SVC_FRONTEND_URL: FRONTEND,
    });
  });
  afterAll(async () => {
    await sys?.stop();
    await provider?.close();
  });

  it('discovers the provider lazily and retries after it was unreachable', async () => {
    expect(provider.discoveryHits).toBe(0);
    const down = await sys.http({ method: 'GET', url: '/api/v1/auth/sso' });
    expect(down.statusCode).toBe(307);
    expect(down.headers.location).toBe(`${FRONTEND_CALLBACK}?error=provider_unavailable`);
    expect(cookieOf(down, 'svc_sso_binding')).toBeUndefined();
    expect(provider.discoveryHits).toBeGreaterThan(0);

    provider.setAvailable(true);
    const up = await sys.http({ method: 'GET', url: '/api/v1/auth/sso' });
    expect(up.statusCode).toBe(307);
    expect(String(up.headers.location).startsWith(`${provider.issuer}/`)).toBe(true);
    // Cached: later flows do not discover again.
    const hits = provider.discoveryHits;
    await sys.http({ method: 'GET', url: '/api/v1/auth/sso' });
    expect(provider.discoveryHits).toBe(hits);
  });

  it('reports sso_enabled true', async () => {
    const res = await sys.http({ method: 'GET', url: '/api/v1/auth/config' });
    expect(res.json()).toEqual({ data: { sso_enabled: true } });
  });

  it('redirects to the provider with state, nonce, PKCE S256 and the hosted-domain hint, and binds the state to the browser', async () => {
    const res = await sys.http({ method: 'GET', url: '/api/v1/auth/sso' });
    expect(res.statusCode).toBe(307);
    expect(res.headers['cache-control']).toBe('no-store');
    const url = new URL(String(res.headers.location));
    const q = url.searchParams;
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe(CLIENT_ID);
    expect(q.get('redirect_uri')).toBe(`${backend}${CALLBACK_PATH}`);
    expect(q.get('scope')).toBe('openid email profile');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('hd')).toBe(domain);
    const state = q.get('state')!;
    expect(state.length).toBeGreaterThanOrEqual(32);
    expect(q.get('nonce')!.length).toBeGreaterThanOrEqual(32);

    const cookie = cookieOf(res, 'svc_sso_binding')!;
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie.attributes).toContain('HttpOnly');
    expect(cookie.attributes).toContain('SameSite=Lax');
    expect(cookie.attributes).toContain('Path=/api/v1/auth/sso');
    expect(cookie.attributes).toContain('Max-Age=300');
    expect(cookie.attributes).not.toContain('Secure'); // backend URL is http

    // The flow state is kept server-side for 5 minutes, holding only a hash of the cookie.
    const kv = await sys.stores.kv();
    const stored = JSON.parse((await kv.get(`sso:state:${state}`))!) as { nonce: string; binding_hash: string };
    expect(stored.nonce).toBe(q.get('nonce'));
    expect(stored.binding_hash).toBe(sha256(cookie.value));
    const ttl = await kv.ttlMs(`sso:state:${state}`);
    expect(ttl).toBeGreaterThan(290_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
  });

  it('provisions a new user on first sign-in, issues tokens through a single-use code and keeps mandatory MFA', async () => {
    const acct = account();
    const flow = await startFlow(sys, provider, acct);
    // Providers add parameters of their own (Google: authuser, prompt, scope); they are ignored, not refused.
    const { res, to } = await finishFlow(sys, { ...flow, callback: `${flow.callback}&authuser=0&prompt=consent` });
    // The binding cookie is cleared on the way out.
    const cleared = cookieOf(res, 'svc_sso_binding')!;
    expect(cleared.value).toBe('');
    expect(cleared.attributes).toContain('Max-Age=0');
    expect(cleared.attributes).toContain('Path=/api/v1/auth/sso');
    expect([...to.searchParams.keys()]).toEqual(['code']);
    const code = to.searchParams.get('code')!;

    const ex = await exchange(sys, code);
    expect(ex.statusCode).toBe(200);
    const tokens = (ex.json() as { data: Tokens }).data;
    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.expires_in).toBe(900);
    expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(tokens.session_id).toMatch(/^[0-9a-f-]{36}$/);

    const user = (await userByEmail(sys, acct.email))!;
    expect(user).toMatchObject({
      status: 'active',
      password_hash: null,
      mfa_enabled: false,
      auth_provider: provider.issuer,
      auth_provider_id: acct.sub,
    });
    const session = await sys.sql<{ user_id: string; is_revoked: boolean }>(
      `SELECT user_id, is_revoked FROM sessions WHERE id = ?`,
      [tokens.session_id],
    );
    expect(session).toEqual([{ user_id: user.id, is_revoked: false }]);

    // /auth/me is an enrolment route: it works without MFA; other user routes demand enrolment first.
    expect(await me(sys, tokens.access_token)).toMatchObject({
      id: user.id,
      email: acct.email,
      mfa_enabled: false,
      status: 'active',
    });
    const sessions = await sys.http({ method: 'GET', url: '/api/v1/auth/sessions', token: tokens.access_token });
    expect(sessions.statusCode).toBe(403);
    expect((sessions.json() as { error: { code: string } }).error.code).toBe('mfa_enrollment_required');

    // Single use.
    const again = await exchange(sys, code);
    expect(again.statusCode).toBe(401);
    expect((again.json() as { error: { code: string } }).error.code).toBe('unauthorized');

    expect((await waitForAuditRow(sys, user.id, 'user.created')).details).toMatchObject({ method: 'sso' });
    const login = await waitForAuditRow(sys, user.id, 'user.login');
    expect(login.details).toMatchObject({ method: 'sso', session_id: tokens.session_id });
    expect(login.actor_id).toBe(user.id);

    // The same identity signs in again without a second user.
    const second = await signInForTokens(sys, provider, acct);
    expect(second.session_id).not.toBe(tokens.session_id);
    expect(
      await sys.sql(`SELECT id FROM users WHERE auth_provider = ? AND auth_provider_id = ?`, [
        provider.issuer,
        acct.sub,
      ]),
    ).toHaveLength(1);
  });

  it('refuses unknown, expired and malformed one-time codes', async () => {
    expect((await exchange(sys, 'not-a-code')).statusCode).toBe(401);

    const to = await signIn(sys, provider, account());
    const code = to.searchParams.get('code')!;
    sys.clock.advance(5 * 60 * 1000 + 1000);
    try {
      expect((await exchange(sys, code)).statusCode).toBe(401);
    } finally {
      sys.clock.advance(-(5 * 60 * 1000 + 1000));
    }

    const empty = await sys.http({ method: 'POST', url: '/api/v1/auth/sso/exchange', payload: {} });
    expect(empty.statusCode).toBe(400);
    expect((empty.json() as { error: { message: string } }).error.message).toContain('code');
  });

  it('links an existing user by e-mail, then signs in by the link even after the e-mail changed', async () => {
    const email = `existing-${run}@${domain}`;
    const existing = await createUser(sys, { email, mfa: false });
    const acct = account({ email: email.toUpperCase() });

    const tokens = await signInForTokens(sys, provider, acct);
    expect((await me(sys, tokens.access_token)).id).toBe(existing.id);
    const linked = (await userById(sys, existing.id))!;
    expect(linked).toMatchObject({ email, auth_provider: provider.issuer, auth_provider_id: acct.sub });
    expect(linked.password_hash).not.toBeNull(); // linking leaves the password alone
    expect((await waitForAuditRow(sys, existing.id, 'user.sso_linked')).details).toMatchObject({
      method: 'sso',
      auth_provider_id: acct.sub,
    });

    // The provider now reports another address for the same subject: the link decides, the local e-mail stays.
    const renamed = await signInForTokens(sys, provider, { ...acct, email: `renamed-${run}@${domain}` });
    expect((await me(sys, renamed.access_token)).id).toBe(existing.id);
    expect((await userById(sys, existing.id))!.email).toBe(email);
    expect(await userByEmail(sys, `renamed-${run}@${domain}`)).toBeUndefined();
  });

  it('provisions the address with its local part as the provider sent it, the domain lower-cased', async () => {
    const local = `Mixed.Case-${randomUUID().slice(0, 8)}`;
    const acct = account({ email: `${local}@${domain.toUpperCase()}` });
    await signInForTokens(sys, provider, acct);
    expect(
      (await sys.sql<{ email: string }>(`SELECT email FROM users WHERE auth_provider_id = ?`, [acct.sub]))[0]?.email,
    ).toBe(`${local}@${domain}`);
  });

  it('refuses to link an e-mail whose user is already linked to another identity', async () => {
    const first = account();
    await signInForTokens(sys, provider, first);
    const to = await signIn(sys, provider, { ...first, sub: `${first.sub}-other` });
    expect(to.searchParams.get('error')).toBe('account_conflict');
    expect(to.searchParams.get('code')).toBeNull();
  });

  it('refuses a wrong or replayed state, and a missing or mismatched binding cookie', async () => {
    // A state we never issued.
    const unknown = await sys.http({
      method: 'GET',
      url: `${CALLBACK_PATH}?code=abc&state=${'x'.repeat(43)}`,
      headers: { cookie: 'svc_sso_binding=whatever' },
    });
    expect(unknown.statusCode).toBe(307);
    expect(unknown.headers.location).toBe(`${FRONTEND_CALLBACK}?error=invalid_state`);
    expect(cookieOf(unknown, 'svc_sso_binding')?.attributes).toContain('Max-Age=0');

    // No state at all.
    const none = await sys.http({ method: 'GET', url: `${CALLBACK_PATH}?code=abc` });
    expect(none.headers.location).toBe(`${FRONTEND_CALLBACK}?error=invalid_state`);

    // The right state without the binding cookie (a callback URL replayed in another browser): refused, state burnt.
    const acct = account();
    const noCookie = await startFlow(sys, provider, acct);
    expect((await finishFlow(sys, noCookie, null)).to.searchParams.get('error')).toBe('invalid_state');
    expect((await finishFlow(sys, noCookie)).to.searchParams.get('error')).toBe('invalid_state');

    // The cookie of another flow.
    const other = await startFlow(sys, provider, acct);
    const mine = await startFlow(sys, provider, acct);
    expect((await finishFlow(sys, mine, `svc_sso_binding=${other.binding}`)).to.searchParams.get('error')).toBe(
      'invalid_state',
    );

    // A legitimate callback works once; the replay is refused.
    const ok = await finishFlow(sys, other);
    expect(ok.to.searchParams.get('code')).toBeTruthy();
    expect((await finishFlow(sys, other)).to.searchParams.get('error')).toBe('invalid_state');
    expect(await userByEmail(sys, acct.email)).toBeDefined();
  });

  it('checks the ID token signature against the provider keys: a token signed by a foreign key under a published key id is refused', async () => {
    const acct = account();
    provider.forgeNextIdToken();
    expect((await signIn(sys, provider, acct)).toString()).toBe(`${FRONTEND_CALLBACK}?error=invalid_token`);
    expect(await userByEmail(sys, acct.email)).toBeUndefined();
    // The same sign-in, signed by the provider itself, goes through.
    expect((await signIn(sys, provider, acct)).searchParams.get('code')).toBeTruthy();
  });

  it('authenticates at the token endpoint with client_secret_basic, the registration default of providers', async () => {
    const before = provider.tokenAuthMethods.length;
    await signInForTokens(sys, provider, account());
    expect(provider.tokenAuthMethods.slice(before)).toEqual(['client_secret_basic']);
  });

  it('answers a malformed callback (repeated or over-long state) with 400 in the error envelope, not a redirect', async () => {
    for (const query of [
      `code=abc&state=${'s'.repeat(43)}&state=${'t'.repeat(43)}`,
      `code=abc&state=${'s'.repeat(513)}`,
    ]) {
      const res = await sys.http({
        method: 'GET',
        url: `${CALLBACK_PATH}?${query}`,
        headers: { cookie: 'svc_sso_binding=whatever' },
      });
      expect(res.statusCode, query.slice(0, 40)).toBe(400);
      expect(res.headers.location).toBeUndefined();
      const { error } = res.json() as { error: { code: string; message: string } };
      expect(error.code).toBe('bad_request');
      expect(error.message).toContain('state');
    }
  });

  it('refuses an ID token whose nonce is not the one bound to the flow', async () => {
    const acct = account();
    const flow = await startFlow(sys, provider, acct);
    // Tamper with the flow's expected nonce: the provider's ID token (correct for the request) no longer matches.
    const kv = await sys.stores.kv();
    const key = `sso:state:${flow.state}`;
    const stored = JSON.parse((await kv.get(key))!) as Record<string, unknown>;
    await kv.set(key, JSON.stringify({ ...stored, nonce: 'a-different-nonce' }), { ttlMs: 60_000 });
    const { to } = await finishFlow(sys, flow);
    expect(to.toString()).toBe(`${FRONTEND_CALLBACK}?error=invalid_token`);
    expect(await userByEmail(sys, acct.email)).toBeUndefined();
  });

  it('refuses another hosted domain, a missing hd claim and an unverified e-mail', async () => {
    const wrongHd = account({ hd: `other-${run}.test` });
    expect((await signIn(sys, provider, wrongHd)).searchParams.get('error')).toBe('domain_not_allowed');
    expect(await userByEmail(sys, wrongHd.email)).toBeUndefined();

    const noHd = account({ hd: undefined, email: `personal-${run}@gmail.test` });
    expect((await signIn(sys, provider, noHd)).searchParams.get('error')).toBe('domain_not_allowed');

    const unverified = account({ email_verified: false });
    expect((await signIn(sys, provider, unverified)).searchParams.get('error')).toBe('email_not_verified');
    expect(await userByEmail(sys, unverified.email)).toBeUndefined();
  });

  it('refuses disabled and not yet activated users', async () => {
    const disabled = await createUser(sys, { email: `disabled-${run}@${domain}`, status: 'disabled', mfa: false });
    expect((await signIn(sys, provider, account({ email: disabled.email }))).searchParams.get('error')).toBe(
      'account_disabled',
    );
    expect((await userById(sys, disabled.id))!.auth_provider_id).toBeNull();

    const invited = await createUser(sys, { email: `invited-${run}@${domain}`, status: 'invited', mfa: false });
    expect((await signIn(sys, provider, account({ email: invited.email }))).searchParams.get('error')).toBe(
      'account_not_active',
    );

    // Linked, then disabled: the link no longer signs in.
    const acct = account();
    await signInForTokens(sys, provider, acct);
    await sys.sql(`UPDATE users SET status = 'disabled' WHERE auth_provider_id = ?`, [acct.sub]);
    expect((await signIn(sys, provider, acct)).searchParams.get('error')).toBe('account_disabled');
  });

  it('passes on a refusal at the provider', async () => {
    expect((await signIn(sys, provider, { error: 'access_denied' })).toString()).toBe(
      `${FRONTEND_CALLBACK}?error=access_denied`,
    );
  });

  it('asks a user with MFA for a code instead of signing in, completed at /auth/mfa/verify', async () => {
    const user: TestUser = await createUser(sys, { email: `mfa-${run}@${domain}`, mfa: true });
    const to = await signIn(sys, provider, account({ email: user.email }));
    expect(to.searchParams.get('code')).toBeNull();
    expect(to.searchParams.get('mfa_required')).toBe('true');
    const mfaToken = to.searchParams.get('mfa_token')!;
    expect(mfaToken).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // No session yet.
    expect(await sys.sql(`SELECT id FROM sessions WHERE user_id = ?`, [user.id])).toHaveLength(0);

    const code = generateSync({ secret: user.totpSecret!, epoch: Math.floor(sys.clock.now() / 1000) });
    const verify = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/mfa/verify',
      payload: { mfa_token: mfaToken, code },
    });
    expect(verify.statusCode).toBe(200);
    const tokens = (verify.json() as { data: Tokens }).data;
    expect(await me(sys, tokens.access_token)).toMatchObject({ id: user.id, mfa_enabled: true });
    // The challenge is single use.
    const replay = await sys.http({
      method: 'POST',
      url: '/api/v1/auth/mfa/verify',
      payload: { mfa_token: mfaToken, code },
    });
    expect(replay.statusCode).toBe(401);
  });
});

describe('SSO without an allowed domain', () => {
  const run = randomUUID().slice(0, 8);
  const backend = 'https://api.console.test';
  let provider: TestOidcProvider;
  let sys: TestSystem;

  beforeAll(async () => {
    provider = await startOidcProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUri: `${backend}${CALLBACK_PATH}`,
    });
    sys = await startTestSystem({
      SVC_SSO_CLIENT_ID: CLIENT_ID,
      SVC_SSO_CLIENT_SECRET: CLIENT_SECRET,
      SVC_SSO_ISSUER_URL: provider.issuer,
      SVC_SSO_ALLOWED_DOMAIN: '',
      SVC_BACKEND_URL: backend,
      SVC_FRONTEND_URL: `${FRONTEND}/`,
    });
  });
  afterAll(async () => {
    await sys?.stop();
    await provider?.close();
  });

  it('sends no hosted-domain hint and marks the binding cookie Secure for an https backend', async () => {
    const res = await sys.http({ method: 'GET', url: '/api/v1/auth/sso' });
    expect(res.statusCode).toBe(307);
    expect(new URL(String(res.headers.location)).searchParams.has('hd')).toBe(false);
    expect(cookieOf(res, 'svc_sso_binding')!.attributes).toContain('Secure');
  });

  it('refuses an unknown user without creating one', async () => {
    const acct: TestAccount = { sub: `sub-${run}-new`, email: `new-${run}@anywhere.test`, email_verified: true };
    expect((await signIn(sys, provider, acct)).toString()).toBe(`${FRONTEND_CALLBACK}?error=account_not_found`);
    expect(await userByEmail(sys, acct.email)).toBeUndefined();
  });

  it('refuses an existing user that is not linked, and does not link it', async () => {
    const user = await createUser(sys, { email: `unlinked-${run}@anywhere.test`, mfa: false });
    const acct: TestAccount = { sub: `sub-${run}-unlinked`, email: user.email, email_verified: true };
    expect((await signIn(sys, provider, acct)).searchParams.get('error')).toBe('account_not_found');
    expect((await userById(sys, user.id))!.auth_provider_id).toBeNull();
  });

  it('signs in a user already linked by provider id', async () => {
    const user = await createUser(sys, { email: `linked-${run}@anywhere.test`, mfa: false });
    const sub = `sub-${run}-linked`;
    await sys.sql(`UPDATE users SET auth_provider = ?, auth_provider_id = ? WHERE id = ?`, [
      provider.issuer,
      sub,
      user.id,
    ]);
    const tokens = await signInForTokens(sys, provider, {
      sub,
      email: `whatever-${run}@elsewhere.test`,
      email_verified: true,
    });
    expect((await me(sys, tokens.access_token)).id).toBe(user.id);
    expect((await waitForAuditRow(sys, user.id, 'user.login')).details).toMatchObject({ method: 'sso' });
  });
});
