import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { Provider, type Interaction, type KoaContext } from 'oidc-provider';

/** The identity the provider signs in on the next authorization request, with the claims its ID token carries. */
export interface TestAccount {
  sub: string;
  email: string;
  email_verified: boolean;
  /** Hosted domain (Google Workspace style); omitted from the ID token when undefined. */
  hd?: string;
  name?: string;
}

export interface TestOidcProvider {
  /** Issuer identifier, `http://127.0.0.1:<port>`. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** The account the next interaction signs in (and consents for). */
  signInAs(account: TestAccount): void;
  /** The next interaction ends with this OAuth error instead of a sign-in (e.g. `access_denied`). */
  failNextWith(error: string): void;
  /** While false every request answers 503, as a provider that is down. */
  setAvailable(up: boolean): void;
  /** Requests made to the discovery document so far. */
  readonly discoveryHits: number;
  /** How the client authenticated at each token request so far (`client_secret_basic`, `_post`, `_jwt`, `none`). */
  readonly tokenAuthMethods: readonly string[];
  /**
   * The next token response carries an ID token with the same claims and header (key id included) but signed by a
   * key the provider never published: what an attacker who can answer in the provider's place would send.
   */
  forgeNextIdToken(): void;
  close(): Promise<void>;
}

export interface OidcProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /** Start unavailable (503) to test lazy discovery. */
  available?: boolean;
  /** The client's registered token endpoint authentication (default: the provider's, `client_secret_basic`). */
  clientAuthMethod?: string;
  /** What discovery lists as `token_endpoint_auth_methods_supported` (default: the provider's). */
  clientAuthMethods?: string[];
}

/**
 * A real OpenID Connect provider (npm `oidc-provider`) on 127.0.0.1 with a random port. There is no login page: the
 * interaction endpoint signs in whichever account the test chose with `signInAs` and grants consent at once, so a
 * test can walk the whole browser flow with plain HTTP requests.
 */
export async function startOidcProvider(opts: OidcProviderOptions): Promise<TestOidcProvider> {
  const accounts = new Map<string, TestAccount>();
  let next: TestAccount | undefined;
  let nextError: string | undefined;
  let available = opts.available ?? true;
  let discoveryHits = 0;
  const tokenAuthMethods: string[] = [];
  let forgeNext = false;
  // Set once the provider exists (its issuer needs the port the server got).
  const routes: { handle?: (req: IncomingMessage, res: ServerResponse) => void } = {};

  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/.well-known/openid-configuration')) discoveryHits += 1;
    if (!available || !routes.handle) {
      res.statusCode = 503;
      res.end('unavailable');
      return;
    }
    routes.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: [opts.redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        ...(opts.clientAuthMethod ? { token_endpoint_auth_method: opts.clientAuthMethod } : {}),
      },
    ],
    ...(opts.clientAuthMethods ? { clientAuthMethods: opts.clientAuthMethods } : {}),
    // Like Google: e-mail, verification flag and hosted domain are claims of the ID token itself.
    conformIdTokenClaims: false,
    claims: { openid: ['sub', 'hd'], email: ['email', 'email_verified'], profile: ['name'] },
    cookies: { keys: ['test-provider-cookie-key-0123456789'] },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    ttl: { AuthorizationCode: 60, AccessToken: 600, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        claims: () => {
          const { hd, name, ...rest } = account;
          return { ...rest, ...(hd !== undefined ? { hd } : {}), ...(name !== undefined ? { name } : {}) };
        },
      };
    },
  });
  // Errors of the provider are expected in negative tests; keep them off the console.
  provider.on('server_error', () => undefined);
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path !== '/token' || ctx.method !== 'POST') return;
    tokenAuthMethods.push(authMethodOf(ctx));
    const body = ctx.body as { id_token?: unknown } | undefined;
    if (forgeNext && typeof body?.id_token === 'string') {
      forgeNext = false;
      ctx.body = { ...body, id_token: await signWithForeignKey(body.id_token) };
    }
  });

  const providerHandler = provider.callback();
  routes.handle = (req, res) => {
    const m = /^\/interaction\/([^/?]+)/.exec(req.url ?? '');
    if (!m) {
      providerHandler(req, res);
      return;
    }
    void finishInteraction(req, res).catch((err: unknown) => {
      res.statusCode = 500;
      res.end(err instanceof Error ? err.message : 'interaction failed');
    });
  };

  async function finishInteraction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details: Interaction = await provider.interactionDetails(req, res);
    if (nextError) {
      const error = nextError;
      nextError = undefined;
      await provider.interactionFinished(
        req,
        res,
        { error, error_description: 'refused by the test' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    const account = next;
    if (!account) throw new Error('test provider: call signInAs(account) before starting a flow');
    accounts.set(account.sub, account);
    const grant = new provider.Grant({ accountId: account.sub, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope ?? 'openid'));
    const grantId = await grant.save();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: account.sub }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  }

  return {
    issuer,
    clientId: opts.clientId,
    clientSecret: opts.clientSecret,
    signInAs: (account) => {
      next = account;
    },
    failNextWith: (error) => {
      nextError = error;
    },
    setAvailable: (up) => {
      available = up;
    },
    get discoveryHits() {
      return discoveryHits;
    },
    get tokenAuthMethods() {
      return tokenAuthMethods;
    },
    forgeNextIdToken: () => {
      forgeNext = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Which client authentication a token request used, read as the provider received it. */
function authMethodOf(ctx: KoaContext): string {
  const form = ctx.oidc?.body ?? {};
  if (/^basic /i.test(ctx.get('authorization'))) return 'client_secret_basic';
  if (typeof form.client_assertion === 'string') return 'client_secret_jwt';
  if (typeof form.client_secret === 'string') return 'client_secret_post';
  return 'none';
}

/** The same ID token (claims and protected header, `kid` included) signed by a freshly made key nobody published. */
async function signWithForeignKey(idToken: string): Promise<string> {
  const header = decodeProtectedHeader(idToken);
  const alg = header.alg ?? 'RS256';
  const { privateKey } = await generateKeyPair(alg, { extractable: false });
  return new SignJWT(decodeJwt(idToken)).setProtectedHeader({ ...header, alg }).sign(privateKey);
}

/** Minimal cookie jar for walking redirects by hand: name → value, every cookie sent back to the provider. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq <= 0) continue;
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      // An expired cookie deletes the entry, as a browser would.
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * Follows the provider's redirects (authorization → interaction → resume → our callback) as a browser would, and
 * returns the URL the provider finally sends the browser to (the relying party's redirect URI with code and state).
 */
export async function walkProvider(authorizationUrl: string, stopAt: string): Promise<URL> {
  const jar = new CookieJar();
  let url = authorizationUrl;
  for (let hop = 0; hop < 10; hop += 1) {
    if (url.startsWith(stopAt)) return new URL(url);
    const res = await fetch(url, { redirect: 'manual', headers: jar.header() ? { cookie: jar.header() } : {} });
    jar.store(res);
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) {
      throw new Error(`provider answered ${res.status} at ${url}: ${(await res.text()).slice(0, 500)}`);
    }
    url = new URL(location, url).toString();
  }
  throw new Error('too many redirects at the provider');
}
