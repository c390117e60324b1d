import type { FastifyRequest } from 'fastify';
import type { CallerContext } from '../../contracts/context.ts';

/**
 * How a route is entered:
 * - public: anyone (probes, login, webhooks with their own token checks);
 * - authenticated: a signed-in user who has enrolled MFA, or a service account (X-API-Key);
 * - user: a signed-in user who has enrolled MFA (no API keys);
 * - enrolment: a signed-in user, MFA not yet required (me, mfa/setup, mfa/confirm, logout).
 */
export type AuthMode = 'public' | 'authenticated' | 'user' | 'enrolment';

/** Resolves the caller of a request into the context actors authorize with; throws DomainError 401/403. */
export interface Authenticator {
  authenticate(req: FastifyRequest, mode: AuthMode): Promise<CallerContext>;
}

export const clientInfo = (req: FastifyRequest): { ip: string; user_agent?: string } => {
  const ua = req.headers['user-agent'];
  return ua ? { ip: req.ip, user_agent: ua.slice(0, 512) } : { ip: req.ip };
};
