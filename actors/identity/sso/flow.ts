import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { z } from 'zod';
import type { CallerContext } from '../../../contracts/context.ts';
import { TokenResponse } from '../../../contracts/domains/identity-auth.ts';
import type { SsoCallbackParams } from '../../../contracts/domains/identity-sso.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { randomToken, safeEqual, sha256 } from '../crypto.ts';
import { storedEmail } from '../email-address.ts';
import type { IdentityDeps } from '../deps.ts';
import { issueSession } from '../sessions.ts';
import { createMfaChallenge } from '../mfa-challenge.ts';
import { errMessage, OidcProvider, trimSlash } from './provider.ts';

/** SSO state and one-time code: 5 minutes, single use (docs/api/identity.md#single-sign-on). */
export const SSO_TTL_MS = 5 * 60 * 1000;
const SCOPE = 'openid email profile';

/**
 * Why a callback failed, sent to the frontend as `?error=<reason>`:
 * - invalid_state: state unknown, used or expired, or the browser-binding cookie missing or not matching;
 * - access_denied: the user (or the provider) refused the sign-in at the provider;
 * - provider_error: the provider answered with an error (authorization or token endpoint) or an unusable response;
 * - provider_unavailable: the provider could not be reached (discovery, token endpoint, signing keys);
 * - invalid_token: the ID token failed validation (signature, issuer, audience, expiry, nonce) or lacks sub/e-mail;
 * - domain_not_allowed: the `hd` claim is not the allowed domain (SVC_SSO_ALLOWED_DOMAIN);
 * - email_not_verified: `email_verified` is not true;
 * - account_not_found: no linked account and linking/provisioning is off (no allowed domain configured);
 * - account_conflict: the e-mail belongs to a user already linked to another identity of the provider;
 * - account_disabled: the user is disabled; account_not_active: the user has not accepted the invitation yet;
 * - server_error: anything unexpected (logged).
 */
export type SsoFailureReason =
  | 'invalid_state'
  | 'access_denied'
  | 'provider_error'
  | 'provider_unavailable'
  | 'invalid_token'
  | 'domain_not_allowed'
  | 'email_not_verified'
  | 'account_not_found'
  | 'account_conflict'
  | 'account_disabled'
  | 'account_not_active'
  | 'server_error';

export class SsoFailure extends Error {
  readonly reason: SsoFailureReason;
  constructor(reason: SsoFailureReason, message: string) {
    super(message);
    this.reason = reason;
    this.name = 'SsoFailure';
  }
}

/** One flow, stored under `sso:state:<state>` until the callback consumes it. */
const FlowState = z.object({
  nonce: z.string(),
  code_verifier: z.string(),
  /** SHA-256 of the browser-binding cookie value: the cookie is the only place the value itself exists. */
  binding_hash: z.string(),
  expires_at: z.number(),
});

/** A finished sign-in waiting for the exchange, sealed (AES-GCM) under `sso:code:<sha256(code)>`. */
const CodeRecord = z.object({ tokens: TokenResponse, issued_at: z.number(), expires_at: z.number() });

const stateKey = (state: string): string => `sso:state:${state}`;
const codeKey = (code: string): string => `sso:code:${sha256(code)}`;

interface UserRow {
  id: string;
  email: string;
  status: 'invited' | 'active' | 'disabled';
  mfa_enabled: boolean;
  auth_provider: string | null;
  auth_provider_id: string | null;
}
const USER_COLUMNS = 'id, email, status, mfa_enabled, auth_provider, auth_provider_id';

/** What the ID token told us, after validation. */
interface Identity {
  issuer: string;
  sub: string;
  email: string;
  name: string | undefined;
}

type Outcome =
  | { kind: 'tokens'; user: UserRow; tokens: TokenResponse; events: AuditEvent[] }
  | { kind: 'mfa'; user: UserRow; events: AuditEvent[] };
interface AuditEvent {
  action: 'user.created' | 'user.sso_linked';
  details: Record<string, unknown>;
}

/**
 * Single sign-on with any OpenID Connect provider: authorization code flow with state, nonce and PKCE (S256), the
 * state bound to the browser by a cookie, then a one-time code the frontend redeems for the token response.
 */
export class SsoFlow {
  private readonly frontend: string;
  private readonly allowedDomain: string;
  private readonly secureCookie: boolean;

  private readonly deps: IdentityDeps;
  private readonly provider: OidcProvider;
  constructor(deps: IdentityDeps, provider: OidcProvider) {
    this.deps = deps;
    this.provider = provider;
    this.frontend = `${trimSlash(deps.config.SVC_FRONTEND_URL)}/auth/sso/callback`;
    this.allowedDomain = deps.config.SVC_SSO_ALLOWED_DOMAIN.trim().toLowerCase();
    this.secureCookie = new URL(deps.config.SVC_BACKEND_URL).protocol === 'https:';
  }

  /** Step 0: a fresh flow, and the provider URL to send the browser to. */
  async start(): Promise<{
    redirect_url: string;
    secure_cookie: boolean;
    binding: string | null;
    binding_max_age_seconds: number;
  }> {
    const base = { secure_cookie: this.secureCookie, binding_max_age_seconds: SSO_TTL_MS / 1000 };
    let config: oidc.Configuration;
    try {
      config = await this.provider.configuration();
    } catch (err) {
      this.deps.log.warn({ err: errMessage(err) }, 'sso start: provider unavailable');
      return { ...base, redirect_url: this.failureUrl('provider_unavailable'), binding: null };
    }
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const binding = randomToken();
    const record: z.infer<typeof FlowState> = {
      nonce,
      code_verifier: codeVerifier,
      binding_hash: sha256(binding),
      expires_at: this.deps.clock.now() + SSO_TTL_MS,
    };
    await this.deps.kv.set(stateKey(state), JSON.stringify(record), { ttlMs: SSO_TTL_MS });
    const params: Record<string, string> = {
      redirect_uri: this.provider.redirectUri,
      scope: SCOPE,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    };
    // Hosted-domain hint: Google shows only accounts of that workspace (the ID token's hd claim is still checked).
    if (this.allowedDomain) params.hd = this.allowedDomain;
    return { ...base, redirect_url: oidc.buildAuthorizationUrl(config, params).toString(), binding };
  }

  /** Steps 1-5 of "Single sign-on callback procedure"; always answers a frontend redirect, errors included. */
  async callback(
    input: z.infer<typeof SsoCallbackParams> & { binding?: string | undefined },
    ctx: CallerContext,
  ): Promise<{ redirect_url: string; secure_cookie: boolean }> {
    const reply = (redirect_url: string) => ({ redirect_url, secure_cookie: this.secureCookie });
    try {
      const outcome = await this.complete(input, ctx);
      if (outcome.kind === 'mfa') {
        const mfaToken = await createMfaChallenge(this.deps, outcome.user.id, 'sso');
        return reply(`${this.frontend}?mfa_required=true&mfa_token=${encodeURIComponent(mfaToken)}`);
      }
      const code = randomToken();
      const now = this.deps.clock.now();
      const record: z.infer<typeof CodeRecord> = {
        tokens: outcome.tokens,
        issued_at: now,
        expires_at: now + SSO_TTL_MS,
      };
      await this.deps.kv.set(codeKey(code), this.deps.box.seal(JSON.stringify(record)), { ttlMs: SSO_TTL_MS });
      return reply(`${this.frontend}?code=${encodeURIComponent(code)}`);
    } catch (err) {
      if (err instanceof SsoFailure) {
        this.deps.log.info(
          { reason: err.reason, detail: err.message, request_id: ctx.request_id },
          'sso sign-in refused',
        );
        return reply(this.failureUrl(err.reason));
      }
      this.deps.log.error({ err, request_id: ctx.request_id }, 'sso callback failed');
      return reply(this.failureUrl('server_error'));
    }
  }

  /** Redeems a one-time code: exactly once (GETDEL), within 5 minutes. */
  async exchange(code: string): Promise<TokenResponse> {
    const sealed = await this.deps.kv.getDel(codeKey(code));
    if (!sealed) throw new DomainError('unauthorized', 'invalid or expired code');
    let record: z.infer<typeof CodeRecord>;
    try {
      record = CodeRecord.parse(JSON.parse(this.deps.box.open(sealed)));
    } catch {
      throw new DomainError('unauthorized', 'invalid or expired code');
    }
    const now = this.deps.clock.now();
    if (now >= record.expires_at) throw new DomainError('unauthorized', 'invalid or expired code');
    // The access token was signed at the callback: report the lifetime it has left, not the full TTL.
    const elapsed = Math.floor(Math.max(0, now - record.issued_at) / 1000);
    return { ...record.tokens, expires_in: Math.max(1, record.tokens.expires_in - elapsed) };
  }

  private failureUrl(reason: SsoFailureReason): string {
    return `${this.frontend}?error=${reason}`;
  }

  private async complete(
    input: z.infer<typeof SsoCallbackParams> & { binding?: string | undefined },
    ctx: CallerContext,
  ): Promise<Outcome> {
    // 1. Single-use state, bound to this browser. Consumed first, whatever happens next.
    if (!input.state) throw new SsoFailure('invalid_state', 'callback without state');
    const raw = await this.deps.kv.getDel(stateKey(input.state));
    const parsed = raw ? FlowState.safeParse(JSON.parse(raw)) : undefined;
    if (!parsed?.success) throw new SsoFailure('invalid_state', 'state unknown, used or expired');
    const flow = parsed.data;
    if (this.deps.clock.now() >= flow.expires_at) throw new SsoFailure('invalid_state', 'state expired');
    if (!input.binding || !safeEqual(sha256(input.binding), flow.binding_hash))
      throw new SsoFailure('invalid_state', 'browser-binding cookie missing or not matching');
    if (input.error)
      throw new SsoFailure(
        input.error === 'access_denied' ? 'access_denied' : 'provider_error',
        `provider error ${input.error}`,
      );
    if (!input.code) throw new SsoFailure('provider_error', 'callback without code');

    // 2. Code for tokens (openid-client checks state, iss, PKCE, and the ID token: signature, iss, aud, exp, nonce).
    let claims: oidc.IDToken | undefined;
    let config: oidc.Configuration;
    try {
      config = await this.provider.configuration();
      const current = new URL(this.provider.redirectUri);
      for (const [k, v] of Object.entries(input))
        if (k !== 'binding' && typeof v === 'string') current.searchParams.set(k, v);
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        expectedState: input.state,
        expectedNonce: flow.nonce,
        pkceCodeVerifier: flow.code_verifier,
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (err) {
      throw new SsoFailure(classify(err), errMessage(err));
    }

    // 3. Our own checks on the ID token.
    if (!claims) throw new SsoFailure('invalid_token', 'no ID token');
    if (claims.nonce !== flow.nonce) throw new SsoFailure('invalid_token', 'nonce mismatch');
    if (this.allowedDomain && (typeof claims.hd !== 'string' || claims.hd.toLowerCase() !== this.allowedDomain))
      throw new SsoFailure('domain_not_allowed', `hd ${String(claims.hd)} is not ${this.allowedDomain}`);
    if (claims.email_verified !== true && claims.email_verified !== 'true')
      throw new SsoFailure('email_not_verified', 'email_verified is not true');
    if (
      typeof claims.sub !== 'string' ||
      !claims.sub ||
      typeof claims.email !== 'string' ||
      !claims.email.includes('@')
    )
      throw new SsoFailure('invalid_token', 'ID token without sub or e-mail');
    const identity: Identity = {
      issuer: config.serverMetadata().issuer,
      sub: claims.sub,
      email: storedEmail(claims.email),
      name: typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : undefined,
    };

    // 4 and 5 in one transaction: a user created or linked here exists only together with its session.
    const outcome = await this.deps.orm.em.fork().transactional(async (em) => {
      const { user, events } = await this.findUser(em, identity);
      if (user.status === 'disabled') throw new SsoFailure('account_disabled', 'user is disabled');
      if (user.status !== 'active') throw new SsoFailure('account_not_active', `user is ${user.status}`);
      if (user.mfa_enabled) return { kind: 'mfa' as const, user, events };
      const tokens = await issueSession(this.deps, em, user, {
        ip: ctx.ip ?? null,
        user_agent: ctx.user_agent ?? null,
      });
      return { kind: 'tokens' as const, user, tokens, events };
    });

    const actor = { id: outcome.user.id, email: outcome.user.email };
    for (const e of outcome.events)
      await this.deps.audit.record(ctx, {
        action: e.action,
        resource_type: 'user',
        resource_id: outcome.user.id,
        client_ids: [],
        details: e.details,
        actor,
      });
    if (outcome.kind === 'tokens')
      await this.deps.audit.record(ctx, {
        action: 'user.login',
        resource_type: 'user',
        resource_id: outcome.user.id,
        client_ids: [],
        details: { method: 'sso', session_id: outcome.tokens.session_id, auth_provider: identity.issuer },
        actor,
      });
    return outcome;
  }

  /**
   * Step 4. The link is (auth_provider = the provider's issuer identifier, auth_provider_id = sub): `sub` is unique only
   * per issuer. By link always; by e-mail (then linked) or newly provisioned only when an allowed domain is configured.
   * Linking and creating are conditional single statements; losing a race to a concurrent callback re-reads once.
   */
  private async findUser(em: EntityManager, id: Identity): Promise<{ user: UserRow; events: AuditEvent[] }> {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const linked = await em.execute<UserRow[]>(
        `SELECT ${USER_COLUMNS} FROM users WHERE auth_provider = ? AND auth_provider_id = ?`,
        [id.issuer, id.sub],
      );
      if (linked[0]) return { user: linked[0], events: [] };
      if (!this.allowedDomain)
        throw new SsoFailure(
          'account_not_found',
          'no linked account; linking and provisioning are off without an allowed domain',
        );

      const byEmail = await em.execute<UserRow[]>(`SELECT ${USER_COLUMNS} FROM users WHERE lower(email) = lower(?)`, [
        id.email,
      ]);
      const existing = byEmail[0];
      if (existing) {
        if (existing.auth_provider_id !== null)
          throw new SsoFailure('account_conflict', 'e-mail belongs to a user linked to another identity');
        if (existing.status === 'disabled') throw new SsoFailure('account_disabled', 'user is disabled');
        if (existing.status !== 'active') throw new SsoFailure('account_not_active', `user is ${existing.status}`);
        const updated = await em.execute<UserRow[]>(
          `UPDATE users SET auth_provider = ?, auth_provider_id = ?, updated_at = ? WHERE id = ? AND auth_provider_id IS NULL RETURNING ${USER_COLUMNS}`,
          [id.issuer, id.sub, new Date(this.deps.clock.now()), existing.id],
        );
        if (updated[0])
          return {
            user: updated[0],
            events: [
              {
                action: 'user.sso_linked',
                details: { method: 'sso', auth_provider: id.issuer, auth_provider_id: id.sub, linked_by: 'email' },
              },
            ],
          };
        continue;
      }

      const now = new Date(this.deps.clock.now());
      const created = await em.execute<UserRow[]>(
        `INSERT INTO users (id, email, display_name, status, is_super_admin, password_hash, mfa_enabled, auth_provider, auth_provider_id, created_at, updated_at)
         VALUES (?, ?, ?, 'active', false, NULL, false, ?, ?, ?, ?)
         ON CONFLICT DO NOTHING RETURNING ${USER_COLUMNS}`,
        [randomUUID(), id.email, id.name ?? id.email.split('@')[0]!, id.issuer, id.sub, now, now],
      );
      if (created[0])
        return {
          user: created[0],
          events: [
            {
              action: 'user.created',
              details: { method: 'sso', auth_provider: id.issuer, email: id.email, status: 'active' },
            },
          ],
        };
    }
    throw new SsoFailure('account_conflict', 'user changed concurrently');
  }
}

/** Maps an openid-client failure of the code exchange to the reason shown to the user. */
function classify(err: unknown): SsoFailureReason {
  if (err instanceof oidc.AuthorizationResponseError)
    return err.error === 'access_denied' ? 'access_denied' : 'provider_error';
  if (err instanceof oidc.ResponseBodyError || err instanceof oidc.WWWAuthenticateChallengeError)
    return 'provider_error';
  if (err instanceof oidc.ClientError) {
    const code = err.code ?? '';
    if (/JWT|JWS|KEY_SELECTION|INVALID_RESPONSE|PARSE_ERROR/.test(code)) return 'invalid_token';
    return 'provider_error';
  }
  if (
    err instanceof Error &&
    (err.name === 'TimeoutError' ||
      err.name === 'AbortError' ||
      (err instanceof TypeError && /fetch failed/i.test(err.message)))
  )
    return 'provider_unavailable';
  return 'server_error';
}
