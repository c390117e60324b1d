import { z } from 'zod';
import { AssignmentBody, AssignmentRoleBody, CreateUserBody, UpdateUserBody } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, PageQuery, type GatewayDeps } from '../../shared/bridge.ts';
import { sendPage } from './paging.ts';

const tags = ['users'];
const UserParams = z.object({ id: z.uuid() });
const AssignmentParams = z.object({ id: z.uuid(), clientId: z.uuid() });

/** Users and their direct client assignments (console-identity.md, Administration). */
export function registerUserRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, { method: 'GET', url: '/api/v1/users', subject: 'svc.identity.users.list', auth: 'authenticated', tags, query: PageQuery, input: ({ query }) => query, send: sendPage });
  bridge(app, deps, { method: 'POST', url: '/api/v1/users', subject: 'svc.identity.users.create', auth: 'authenticated', tags, body: CreateUserBody, input: ({ body }) => body, status: 201 });
  bridge(app, deps, { method: 'GET', url: '/api/v1/users/:id', subject: 'svc.identity.users.get', auth: 'authenticated', tags, params: UserParams, input: ({ params }) => params });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/users/:id',
    subject: 'svc.identity.users.update',
    auth: 'authenticated',
    tags,
    params: UserParams,
    body: UpdateUserBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  bridge(app, deps, { method: 'DELETE', url: '/api/v1/users/:id', subject: 'svc.identity.users.disable', auth: 'authenticated', tags, params: UserParams, input: ({ params }) => params, status: 204 });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/users/:id/resend-invite',
    subject: 'svc.identity.users.resend_invite',
    auth: 'authenticated',
    tags,
    params: UserParams,
    input: ({ params }) => params,
  });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/users/:id/reset-password',
    subject: 'svc.identity.users.reset_password',
    auth: 'authenticated',
    tags,
    params: UserParams,
    input: ({ params }) => params,
  });

  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/users/:id/clients',
    subject: 'svc.identity.users.clients.list',
    auth: 'authenticated',
    tags,
    params: UserParams,
    input: ({ params }) => ({ user_id: params.id }),
  });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/users/:id/clients',
    subject: 'svc.identity.users.clients.assign',
    auth: 'authenticated',
    tags,
    params: UserParams,
    body: AssignmentBody,
    input: ({ params, body }) => ({ user_id: params.id, client_id: body.client_id, role_id: body.role_id }),
    status: 201,
  });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/users/:id/clients/:clientId',
    subject: 'svc.identity.users.clients.update',
    auth: 'authenticated',
    tags,
    params: AssignmentParams,
    body: AssignmentRoleBody,
    input: ({ params, body }) => ({ user_id: params.id, client_id: params.clientId, role_id: body.role_id }),
  });
  bridge(app, deps, {
    method: 'DELETE',
    url: '/api/v1/users/:id/clients/:clientId',
    subject: 'svc.identity.users.clients.remove',
    auth: 'authenticated',
    tags,
    params: AssignmentParams,
    input: ({ params }) => ({ user_id: params.id, client_id: params.clientId }),
    status: 204,
  });
}
