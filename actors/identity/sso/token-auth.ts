import * as oidc from 'openid-client';

/** How the client authenticates at the token endpoint with its secret (RFC 6749 §2.3.1, OIDC Core §9). */
export const TOKEN_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'client_secret_jwt'] as const;
export type TokenAuthMethod = (typeof TOKEN_AUTH_METHODS)[number];

/**
 * The method to use: the operator's choice when set; otherwise `client_secret_basic` (the registration default of
 * providers, and what RFC 6749 recommends) unless discovery lists methods without it, then the first secret-based
 * one it lists. An absent list means basic (OpenID Connect Discovery 1.0 §3).
 */
export function chooseTokenAuthMethod(
  supported: readonly string[] | undefined,
  override: TokenAuthMethod | '',
): TokenAuthMethod {
  if (override) return override;
  const offered = supported ?? ['client_secret_basic'];
  if (offered.includes('client_secret_basic')) return 'client_secret_basic';
  return TOKEN_AUTH_METHODS.find((m) => offered.includes(m)) ?? 'client_secret_basic';
}

export function clientAuthFor(method: TokenAuthMethod, secret: string): oidc.ClientAuth {
  switch (method) {
    case 'client_secret_basic':
      return oidc.ClientSecretBasic(secret);
    case 'client_secret_post':
      return oidc.ClientSecretPost(secret);
    case 'client_secret_jwt':
      return oidc.ClientSecretJwt(secret);
  }
}
