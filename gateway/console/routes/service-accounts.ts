import { z } from 'zod';
import { CreateServiceAccountBody, UpdateServiceAccountBody } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, PageQuery, type GatewayDeps } from '../../shared/bridge.ts';
import { sendPage } from './paging.ts';

const tags = ['service-accounts'];
const SaParams = z.object({ id: z.uuid() });

/** Service accounts, governed by the users permissions (console-identity.md, Administration). */
export function registerServiceAccountRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/service-accounts',
    subject: 'svc.identity.service_accounts.list',
    auth: 'authenticated',
    tags,
    query: PageQuery,
    input: ({ query }) => query,
    send: sendPage,
  });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/service-accounts',
    subject: 'svc.identity.service_accounts.create',
    auth: 'authenticated',
    tags,
    body: CreateServiceAccountBody,
    input: ({ body }) => body,
    status: 201,
  });
  bridge(app, deps, { method: 'GET', url: '/api/v1/service-accounts/:id', subject: 'svc.identity.service_accounts.get', auth: 'authenticated', tags, params: SaParams, input: ({ params }) => params });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/service-accounts/:id',
    subject: 'svc.identity.service_accounts.update',
    auth: 'authenticated',
    tags,
    params: SaParams,
    body: UpdateServiceAccountBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  bridge(app, deps, {
    method: 'DELETE',
    url: '/api/v1/service-accounts/:id',
    subject: 'svc.identity.service_accounts.delete',
    auth: 'authenticated',
    tags,
    params: SaParams,
    input: ({ params }) => params,
    status: 204,
  });
}
