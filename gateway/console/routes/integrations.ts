import { z } from 'zod';
import { IntegrationId } from '../../../contracts/domains/fleet-inventory.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const ById = z.object({ id: z.uuid() });
const ByIntegration = z.object({ id: IntegrationId });

/** Integrations (docs/api/fleet.md#integrations); integrations:read checked by the fleet actors. */
export function registerIntegrationRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['integrations'] });
  route({ method: 'GET', url: '/api/v1/integrations', subject: 'svc.fleet.integrations.list', input: () => ({}) });
  route({
    method: 'GET',
    url: '/api/v1/integrations/:id',
    subject: 'svc.fleet.integrations.get',
    params: ByIntegration,
    input: ({ params }) => params,
  });
  route({
    method: 'GET',
    url: '/api/v1/integrations/:id/hosts',
    subject: 'svc.fleet.integrations.hosts',
    params: ByIntegration,
    input: ({ params }) => params,
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/integrations',
    subject: 'svc.fleet.integrations.of_host',
    params: ById,
    input: ({ params }) => params,
  });
  route({
    method: 'GET',
    url: '/api/v1/clients/:id/integrations',
    subject: 'svc.fleet.integrations.of_client',
    params: ById,
    input: ({ params }) => params,
  });
}
