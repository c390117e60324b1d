import * as oidc from 'openid-client';
import type { Config } from '../../runtime/config.ts';
import type { Logger } from '../../runtime/logger.ts';

/** Seconds any one HTTP call to the provider may take (discovery, token endpoint, JWKS). */
const PROVIDER_TIMEOUT_S = 5;
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** Where the provider sends the browser back: `{backend_url}/api/v1/auth/sso/callback`. */
export const callbackUrl = (config: Pick<Config, 'SVC_BACKEND_URL'>): string => `${trimSlash(config.SVC_BACKEND_URL)}/api/v1/auth/sso/callback`;

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

  private readonly config: Pick<Config, 'SVC_SSO_ISSUER_URL' | 'SVC_SSO_CLIENT_ID' | 'SVC_SSO_CLIENT_SECRET' | 'SVC_BACKEND_URL'>;
  private readonly log: Logger;
  constructor(
    config: Pick<Config, 'SVC_SSO_ISSUER_URL' | 'SVC_SSO_CLIENT_ID' | 'SVC_SSO_CLIENT_SECRET' | 'SVC_BACKEND_URL'>,
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
    if (issuer.protocol !== 'https:' && !insecure) throw new Error(`SVC_SSO_ISSUER_URL must be https (got ${issuer.protocol})`);
    let lastError: unknown;
    // One quick second attempt covers a provider that is just starting; later requests retry on their own.
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      try {
        const config = await oidc.discovery(
          issuer,
          this.config.SVC_SSO_CLIENT_ID,
          this.config.SVC_SSO_CLIENT_SECRET ? { client_secret: this.config.SVC_SSO_CLIENT_SECRET } : undefined,
          this.config.SVC_SSO_CLIENT_SECRET ? oidc.ClientSecretPost(this.config.SVC_SSO_CLIENT_SECRET) : oidc.None(),
          { timeout: PROVIDER_TIMEOUT_S, ...(insecure ? { execute: [oidc.allowInsecureRequests] } : {}) },
        );
        this.log.info({ issuer: config.serverMetadata().issuer }, 'sso provider discovered');
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
