import { z } from 'zod';
import { AgentListQuery } from '../../../contracts/domains/fleet.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const IdParams = z.object({ id: z.uuid() });

/** Agent administration: the enrolled agents and their revocation (enrolment routes live with the enrolment). */
export function registerAgentAdminRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['agents'] });
  route({
    method: 'GET',
    url: '/api/v1/agents',
    subject: 'svc.fleet.agents.list',
    query: AgentListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'DELETE',
    url: '/api/v1/agents/:id',
    subject: 'svc.fleet.agents.revoke',
    params: IdParams,
    input: ({ params }) => params,
    status: 204,
  });
}
