import * as oidc from 'openid-client';
import { afterEach, describe, expect, it } from 'vitest';
import { OidcProvider } from '../../actors/identity/sso/provider.ts';
import { chooseTokenAuthMethod, type TokenAuthMethod } from '../../actors/identity/sso/token-auth.ts';
import { createLogger } from '../../platform/logger.ts';
import { startOidcProvider, walkProvider, type TestOidcProvider } from '../support/oidc-provider.ts';

const CLIENT_ID = 'console-token-auth-test';
const CLIENT_SECRET = 'console-token-auth-test-secret-0123456789abcdef';
const BACKEND = 'http://backend.test';
const REDIRECT = `${BACKEND}/api/v1/auth/sso/callback`;
const log = createLogger('silent');

let provider: TestOidcProvider | undefined;
afterEach(async () => {
  await provider?.close();
  provider = undefined;
});

/** One authorization code flow through the relying party's provider configuration, as the SSO flow runs it. */
async function codeFlow(rp: OidcProvider, p: TestOidcProvider): Promise<void> {
  const config = await rp.configuration();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const verifier = oidc.randomPKCECodeVerifier();
  p.signInAs({ sub: `sub-${state.slice(0, 8)}`, email: 'someone@corp.test', email_verified: true });
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: rp.redirectUri,
    scope: 'openid email',
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const back = await walkProvider(url.toString(), REDIRECT);
  const tokens = await oidc.authorizationCodeGrant(config, back, {
    expectedState: state,
    expectedNonce: nonce,
    pkceCodeVerifier: verifier,
    idTokenExpected: true,
  });
  expect(tokens.claims()?.email).toBe('someone@corp.test');
}

async function relyingParty(opts: {
  registered?: string;
  offered?: string[];
  override?: TokenAuthMethod | '';
}): Promise<{ rp: OidcProvider; p: TestOidcProvider }> {
  provider = await startOidcProvider({
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUri: REDIRECT,
    ...(opts.registered ? { clientAuthMethod: opts.registered } : {}),
    ...(opts.offered ? { clientAuthMethods: opts.offered } : {}),
  });
  const rp = new OidcProvider(
    {
      SVC_SSO_ISSUER_URL: provider.issuer,
      SVC_SSO_CLIENT_ID: CLIENT_ID,
      SVC_SSO_CLIENT_SECRET: CLIENT_SECRET,
      SVC_SSO_TOKEN_AUTH_METHOD: opts.override ?? '',
      SVC_BACKEND_URL: BACKEND,
    },
    log,
  );
  return { rp, p: provider };
}

describe('SSO token endpoint client authentication', () => {
  it('chooses basic by default, else the first secret method discovery offers, and the operator override first', () => {
    expect(chooseTokenAuthMethod(undefined, '')).toBe('client_secret_basic');
    expect(chooseTokenAuthMethod(['client_secret_post', 'client_secret_basic', 'private_key_jwt'], '')).toBe(
      'client_secret_basic',
    );
    expect(chooseTokenAuthMethod(['private_key_jwt', 'client_secret_post'], '')).toBe('client_secret_post');
    expect(chooseTokenAuthMethod(['client_secret_jwt'], '')).toBe('client_secret_jwt');
    expect(chooseTokenAuthMethod(['client_secret_basic'], 'client_secret_post')).toBe('client_secret_post');
  });

  it('uses client_secret_basic with a client registered with the provider default', async () => {
    const { rp, p } = await relyingParty({});
    await codeFlow(rp, p);
    expect(p.tokenAuthMethods).toEqual(['client_secret_basic']);
  });

  it('uses client_secret_post when discovery offers it and not basic', async () => {
    const { rp, p } = await relyingParty({
      registered: 'client_secret_post',
      offered: ['client_secret_post', 'private_key_jwt'],
    });
    await codeFlow(rp, p);
    expect(p.tokenAuthMethods).toEqual(['client_secret_post']);
  });

  it('uses client_secret_jwt when that is the only secret method offered', async () => {
    const { rp, p } = await relyingParty({
      registered: 'client_secret_jwt',
      offered: ['client_secret_jwt', 'private_key_jwt'],
    });
    await codeFlow(rp, p);
    expect(p.tokenAuthMethods).toEqual(['client_secret_jwt']);
  });

  it('follows SVC_SSO_TOKEN_AUTH_METHOD when the operator sets it', async () => {
    const { rp, p } = await relyingParty({ registered: 'client_secret_post', override: 'client_secret_post' });
    await codeFlow(rp, p);
    expect(p.tokenAuthMethods).toEqual(['client_secret_post']);
  });
});
