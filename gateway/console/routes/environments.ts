import { z } from 'zod';
import {
  CreateEnvironmentBody,
  EnvironmentListQuery,
  UpdateEnvironmentBody,
} from '../../../contracts/domains/fleet.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const IdParams = z.object({ id: z.uuid() });

/** Environments of a client and each one alone (docs/api/fleet.md#environments-and-hosts). */
export function registerEnvironmentRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['environments'] });
  route({
    method: 'GET',
    url: '/api/v1/clients/:id/environments',
    subject: 'svc.fleet.environments.list',
    params: IdParams,
    query: EnvironmentListQuery,
    input: ({ params, query }) => ({ client_id: params.id, ...query }),
    paged: true,
  });
  route({
    method: 'POST',
    url: '/api/v1/clients/:id/environments',
    subject: 'svc.fleet.environments.create',
    params: IdParams,
    body: CreateEnvironmentBody,
    input: ({ params, body }) => ({ client_id: params.id, ...body }),
    status: 201,
  });
  route({
    method: 'GET',
    url: '/api/v1/environments/:id',
    subject: 'svc.fleet.environments.get',
    params: IdParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/environments/:id',
    subject: 'svc.fleet.environments.update',
    params: IdParams,
    body: UpdateEnvironmentBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/environments/:id',
    subject: 'svc.fleet.environments.delete',
    params: IdParams,
    input: ({ params }) => params,
    status: 204,
  });
}
