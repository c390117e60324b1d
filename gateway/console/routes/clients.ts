import { z } from 'zod';
import { ClientListQuery, CreateClientBody, UpdateClientBody } from '../../../contracts/domains/fleet.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, type GatewayDeps } from '../../shared/bridge.ts';
import { sendPage } from './paging.ts';

const tags = ['clients'];
const ClientParams = z.object({ id: z.uuid() });
/** The slug is fixed at creation: a PUT naming one is refused rather than silently ignored. */
const UpdateBody = UpdateClientBody.extend({ slug: z.unknown().optional() }).refine((b) => b.slug === undefined, { message: 'the slug cannot be changed', path: ['slug'] });

/** Clients (console-operations.md, "Clients and environments"); permissions checked by the fleet actors. */
export function registerClientRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, { method: 'GET', url: '/api/v1/clients', subject: 'svc.fleet.clients.list', auth: 'authenticated', tags, query: ClientListQuery, input: ({ query }) => query, send: sendPage });
  bridge(app, deps, { method: 'POST', url: '/api/v1/clients', subject: 'svc.fleet.clients.create', auth: 'authenticated', tags, body: CreateClientBody, input: ({ body }) => body, status: 201 });
  bridge(app, deps, { method: 'GET', url: '/api/v1/clients/:id', subject: 'svc.fleet.clients.get', auth: 'authenticated', tags, params: ClientParams, input: ({ params }) => params });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/clients/:id',
    subject: 'svc.fleet.clients.update',
    auth: 'authenticated',
    tags,
    params: ClientParams,
    body: UpdateBody,
    input: ({ params, body }) => ({ id: params.id, name: body.name }),
  });
  bridge(app, deps, { method: 'DELETE', url: '/api/v1/clients/:id', subject: 'svc.fleet.clients.delete', auth: 'authenticated', tags, params: ClientParams, input: ({ params }) => params, status: 204 });
}
