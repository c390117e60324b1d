import { z } from 'zod';
import { CreateInstallTokenBody, EnrollBody, EnrollCompleteBody } from '../../../contracts/domains/fleet-agents.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const EnvParams = z.object({ id: z.uuid() });

/**
 * Agent enrolment (routes fixed by the fleet issue): an install token for an environment, then the public two-step
 * challenge-response on the agent's own nkey, counted on the auth rate limit like logins.
 */
export function registerEnrolmentRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['agents'] });
  // The token is shown once and only its hash is kept: no copy for Idempotency-Key replays.
  route({
    method: 'POST',
    url: '/api/v1/environments/:id/install-tokens',
    subject: 'svc.fleet.install_tokens.create',
    params: EnvParams,
    body: CreateInstallTokenBody.default({ expires_in_seconds: 86_400 }),
    input: ({ params, body }) => ({ environment_id: params.id, ...body }),
    status: 201,
    idempotent: false,
  });
  const open = routeGroup(app, deps, { auth: 'public', tags: ['agents'] });
  open({
    method: 'POST',
    url: '/api/v1/agents/enroll',
    subject: 'svc.fleet.enrol.start',
    rate: 'auth',
    body: EnrollBody,
    input: ({ body }) => body,
  });
  open({
    method: 'POST',
    url: '/api/v1/agents/enroll/complete',
    subject: 'svc.fleet.enrol.complete',
    rate: 'auth',
    body: EnrollCompleteBody,
    input: ({ body }) => body,
  });
}
