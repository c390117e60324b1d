import * as oidc from 'openid-client';
import type { Config } from '../../../platform/config.ts';
import type { Logger } from '../../../platform/logger.ts';
import { chooseTokenAuthMethod, clientAuthFor } from './token-auth.ts';

/** Seconds any one HTTP call to the provider may take (discovery, token endpoint, JWKS). */
const PROVIDER_TIMEOUT_S = 5;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Where the provider sends the browser back: `{backend_url}/api/v1/auth/sso/callback`. */
export const callbackUrl = (config: Pick<Config, 'SVC_BACKEND_URL'>): string =>
  `${trimSlash(config.SVC_BACKEND_URL)}/api/v1/auth/sso/callback`;

export const trimSlash = (url: string): string => url.replace(/\/+$/, '');

/**
 * The relying party's view of the configured OpenID Connect provider. Discovery is lazy (the first SSO request
 * runs it, so the system starts while the provider is unreachable), shared by concurrent requests, cached once it
 * succeeded, and retried by the next request when it failed. Signing keys are fetched and refreshed by openid-client.
 */
export class OidcProvider {
  private cached: oidc.Configuration | undefined;
  private pending: Promise<oidc.Configuration> | undefined;
  readonly redirectUri: string;

  private readonly config: Pick<
    Config,
    | 'SVC_SSO_ISSUER_URL'
    | 'SVC_SSO_CLIENT_ID'
    | 'SVC_SSO_CLIENT_SECRET'
    | 'SVC_SSO_TOKEN_AUTH_METHOD'
    | 'SVC_BACKEND_URL'
  >;
  private readonly log: Logger;
  constructor(
    config: Pick<
      Config,
      | 'SVC_SSO_ISSUER_URL'
      | 'SVC_SSO_CLIENT_ID'
      | 'SVC_SSO_CLIENT_SECRET'
      | 'SVC_SSO_TOKEN_AUTH_METHOD'
      | 'SVC_BACKEND_URL'
    >,
    log: Logger,
  ) {
    this.config = config;
    this.log = log;
    this.redirectUri = callbackUrl(config);
  }

  /** The discovered configuration; throws when the provider cannot be reached or its metadata is invalid. */
  async configuration(): Promise<oidc.Configuration> {
    if (this.cached) return this.cached;
    this.pending ??= this.discover().then(
      (c) => {
        this.cached = c;
        this.pending = undefined;
        return c;
      },
      (err: unknown) => {
        // Forget the failure: the next request tries again.
        this.pending = undefined;
        throw err;
      },
    );
    return this.pending;
  }

  private async discover(): Promise<oidc.Configuration> {
    const issuer = new URL(this.config.SVC_SSO_ISSUER_URL);
    // Plain HTTP only for a provider on this machine (local development, tests); anything else must be https.
    const insecure = issuer.protocol === 'http:' && LOOPBACK.has(issuer.hostname);
    if (issuer.protocol !== 'https:' && !insecure)
      throw new Error(`SVC_SSO_ISSUER_URL must be https (got ${issuer.protocol})`);
    let lastError: unknown;
    // One quick second attempt covers a provider that is just starting; later requests retry on their own.
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      try {
        const secret = this.config.SVC_SSO_CLIENT_SECRET;
        // The token endpoint's authentication depends on what discovery offers: chosen once the metadata is in.
        let auth: oidc.ClientAuth = oidc.None();
        const config = await oidc.discovery(
          issuer,
          this.config.SVC_SSO_CLIENT_ID,
          secret ? { client_secret: secret } : undefined,
          (as, client, body, headers) => auth(as, client, body, headers),
          { timeout: PROVIDER_TIMEOUT_S, ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}) },
        );
        // openid-client v6 checks an ID token's signature only when asked. OIDC Core 3.1.3.7 lets a client skip it
        // only for a token received directly over TLS, and a loopback issuer is plain http: always check it.
        oidc.enableNonRepudiationChecks(config);
        const offered = config.serverMetadata().token_endpoint_auth_methods_supported;
        const method = secret ? chooseTokenAuthMethod(offered, this.config.SVC_SSO_TOKEN_AUTH_METHOD) : 'none';
        if (secret && method !== 'none') auth = clientAuthFor(method, secret);
        // An operator's choice is used as given (metadata can be incomplete), but worth a line in the log.
        if (offered && !offered.includes(method))
          this.log.warn({ method, offered }, 'sso token endpoint authentication method not listed by the provider');
        this.log.info(
          { issuer: config.serverMetadata().issuer, token_endpoint_auth_method: method },
          'sso provider discovered',
        );
        return config;
      } catch (err) {
        lastError = err;
        this.log.warn({ err: errMessage(err), issuer: issuer.href, attempt }, 'sso provider discovery failed');
        if (attempt < 2) await new Promise((r) => setTimeout(r, 250));
      }
    }
    throw lastError;
  }
}

export const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));
