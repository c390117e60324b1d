import { z } from 'zod';
import { HostListQuery, PutTagsBody } from '../../../contracts/domains/fleet.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const IdParams = z.object({ id: z.uuid() });

/** Hosts: the environment's list, one host, its user tags, deletion (docs/api/fleet.md#environments-and-hosts). */
export function registerHostRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['hosts'] });
  route({
    method: 'GET',
    url: '/api/v1/environments/:id/hosts',
    subject: 'svc.fleet.hosts.list',
    params: IdParams,
    query: HostListQuery,
    input: ({ params, query }) => ({ environment_id: params.id, ...query }),
    paged: true,
  });
  route({
    method: 'GET',
    url: '/api/v1/hosts/:id',
    subject: 'svc.fleet.hosts.get',
    params: IdParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/hosts/:id/tags',
    subject: 'svc.fleet.hosts.tags.replace',
    params: IdParams,
    body: PutTagsBody,
    input: ({ params, body }) => ({ id: params.id, tags: body.tags }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/hosts/:id',
    subject: 'svc.fleet.hosts.delete',
    params: IdParams,
    input: ({ params }) => params,
    status: 204,
  });
}
