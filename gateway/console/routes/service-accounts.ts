import { z } from 'zod';
import { CreateServiceAccountBody, UpdateServiceAccountBody } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { PageQuery, routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const SaParams = z.object({ id: z.uuid() });

/** Service accounts, governed by the users permissions (docs/api/identity.md#administration). */
export function registerServiceAccountRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['service-accounts'] });
  route({
    method: 'GET',
    url: '/api/v1/service-accounts',
    subject: 'svc.identity.service_accounts.list',
    query: PageQuery,
    input: ({ query }) => query,
    paged: true,
  });
  // The answer carries the API key, shown once: no copy of it is kept for Idempotency-Key replays.
  route({
    method: 'POST',
    url: '/api/v1/service-accounts',
    subject: 'svc.identity.service_accounts.create',
    body: CreateServiceAccountBody,
    input: ({ body }) => body,
    status: 201,
    idempotent: false,
  });
  route({
    method: 'GET',
    url: '/api/v1/service-accounts/:id',
    subject: 'svc.identity.service_accounts.get',
    params: SaParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/service-accounts/:id',
    subject: 'svc.identity.service_accounts.update',
    params: SaParams,
    body: UpdateServiceAccountBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/service-accounts/:id',
    subject: 'svc.identity.service_accounts.delete',
    params: SaParams,
    input: ({ params }) => params,
    status: 204,
  });
}
