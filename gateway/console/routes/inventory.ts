import { z } from 'zod';
import { CronJobListQuery, ProcessListQuery } from '../../../contracts/domains/fleet-inventory.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const HostParams = z.object({ id: z.uuid() });

/** Host inventory (docs/api/fleet.md#inventory-routes); hosts:read checked by the fleet actors. */
export function registerInventoryRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['inventory'] });
  const byHost = { params: HostParams, input: ({ params }: { params: z.output<typeof HostParams> }) => params };
  route({ method: 'GET', url: '/api/v1/hosts/:id/services', subject: 'svc.fleet.inventory.services', ...byHost });
  route({ method: 'GET', url: '/api/v1/hosts/:id/packages', subject: 'svc.fleet.inventory.packages', ...byHost });
  route({ method: 'GET', url: '/api/v1/hosts/:id/ports', subject: 'svc.fleet.inventory.ports', ...byHost });
  route({ method: 'GET', url: '/api/v1/hosts/:id/interfaces', subject: 'svc.fleet.inventory.interfaces', ...byHost });
  route({ method: 'GET', url: '/api/v1/hosts/:id/users', subject: 'svc.fleet.inventory.users', ...byHost });
  route({ method: 'GET', url: '/api/v1/hosts/:id/gpu-devices', subject: 'svc.fleet.inventory.gpu_devices', ...byHost });
  route({ method: 'GET', url: '/api/v1/hosts/:id/security', subject: 'svc.fleet.inventory.security', ...byHost });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/processes',
    subject: 'svc.fleet.inventory.processes',
    params: HostParams,
    query: ProcessListQuery,
    input: ({ params, query }) => ({ id: params.id, ...query }),
    paged: true,
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id/cron-jobs',
    subject: 'svc.fleet.inventory.cron_jobs',
    params: HostParams,
    query: CronJobListQuery,
    input: ({ params, query }) => ({ id: params.id, ...query }),
    paged: true,
  });
}
