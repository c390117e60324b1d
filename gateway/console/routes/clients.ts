import { z } from 'zod';
import { ClientListQuery, CreateClientBody, UpdateClientBody } from '../../../contracts/domains/fleet.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const ClientParams = z.object({ id: z.uuid() });

/** Clients (docs/api/identity.md#clients-fleet); permissions checked by the fleet actors. */
export function registerClientRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['clients'] });
  route({
    method: 'GET',
    url: '/api/v1/clients',
    subject: 'svc.fleet.clients.list',
    query: ClientListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'POST',
    url: '/api/v1/clients',
    subject: 'svc.fleet.clients.create',
    body: CreateClientBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'GET',
    url: '/api/v1/clients/:id',
    subject: 'svc.fleet.clients.get',
    params: ClientParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/clients/:id',
    subject: 'svc.fleet.clients.update',
    params: ClientParams,
    body: UpdateClientBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/clients/:id',
    subject: 'svc.fleet.clients.delete',
    params: ClientParams,
    input: ({ params }) => params,
    status: 204,
  });
}
