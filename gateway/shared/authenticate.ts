import type { FastifyRequest } from 'fastify';
import { liveKey, type AccessCache, type AccessTokens } from '../../actors/identity/mod.ts';
import type { Caller } from '../../platform/call.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import { anonymousContext, type CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { clientInfo, type AuthMode, type Authenticator } from './auth.ts';
import { deadlineOf, traceparentOf } from './request-context.ts';

const BEARER = /^Bearer\s+(\S+)$/i;

/**
 * Bearer JWT (verified here, no hop) or X-API-Key (verified by the identity actors); then the caller's current
 * status and per-client permissions come from the access cache, or on a miss from the access resolver (which fills
 * it), so a disabled user or a changed role takes effect on the next request. Mandatory MFA is enforced here: until
 * enrolled, only the enrolment routes answer.
 */
export class TokenAuthenticator implements Authenticator {
  private readonly tokens: AccessTokens;
  private readonly caller: Caller<SystemCatalogue>;
  private readonly cache?: AccessCache;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  constructor(
    tokens: AccessTokens,
    caller: Caller<SystemCatalogue>,
    cache?: AccessCache,
    now: () => number = Date.now,
    timeoutMs = 5000,
  ) {
    this.tokens = tokens;
    this.caller = caller;
    this.cache = cache;
    this.now = now;
    this.timeoutMs = timeoutMs;
  }

  /** A cache that cannot be read is a miss: the resolver answers instead. */
  private async cached<T>(read: () => Promise<T | null>): Promise<T | null> {
    try {
      return await read();
    } catch {
      return null;
    }
  }

  async authenticate(req: FastifyRequest, mode: AuthMode): Promise<CallerContext> {
    const base = anonymousContext(req.id, clientInfo(req));
    // A resolver call gets at most `timeoutMs`, and never more than what is left of the request's deadline.
    const callOpts = (): { deadline: number; traceparent: string } => ({
      deadline: Math.min(deadlineOf(req, this.timeoutMs), Date.now() + this.timeoutMs),
      traceparent: traceparentOf(req),
    });
    const authz = req.headers.authorization;
    const apiKey = req.headers['x-api-key'];
    if (typeof authz === 'string' && authz.length > 0) {
      const token = BEARER.exec(authz)?.[1];
      if (!token) throw new DomainError('unauthorized', 'Authorization must be "Bearer <token>"');
      const claims = await this.tokens.verify(token);
      const user =
        (this.cache && (await this.cached(() => this.cache!.user(claims.sub)))) ||
        (await this.caller
          .call('svc.identity.access.resolve', { user_id: claims.sub }, base, callOpts())
          .catch((err: unknown) => {
            throw err instanceof DomainError && err.code === 'bad_request'
              ? new DomainError('unauthorized', 'invalid token')
              : err;
          }));
      if (user.status !== 'active') throw new DomainError('unauthorized', 'account is not active');
      if (mode !== 'enrolment' && !user.mfa_enabled)
        throw new DomainError('mfa_enrollment_required', 'multi-factor authentication must be enrolled first');
      return {
        ...base,
        principal: {
          kind: 'user',
          user_id: user.user_id,
          session_id: claims.sid,
          email: user.email,
          is_super_admin: user.is_super_admin,
          mfa_enabled: user.mfa_enabled,
        },
        access: user.access,
      };
    }
    if (typeof apiKey === 'string' && apiKey.length > 0) {
      if (mode === 'user' || mode === 'enrolment')
        throw new DomainError('forbidden', 'this route needs a signed-in user; API keys are not accepted');
      const key = apiKey.slice(0, 256);
      const entry = this.cache ? await this.cached(() => this.cache!.apiKey(key)) : null;
      const sa = entry
        ? liveKey(entry, this.now())
        : await this.caller.call('svc.identity.access.resolve_key', { api_key: key }, base, callOpts());
      return {
        ...base,
        principal: { kind: 'service_account', service_account_id: sa.service_account_id, name: sa.name },
        access: sa.access,
      };
    }
    throw new DomainError('unauthorized', 'missing credentials: send Authorization: Bearer <token> or X-API-Key');
  }
}
