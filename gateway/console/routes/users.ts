import { z } from 'zod';
import {
  AssignmentBody,
  AssignmentRoleBody,
  CreateUserBody,
  UpdateUserBody,
} from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { PageQuery, routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const UserParams = z.object({ id: z.uuid() });
const AssignmentParams = z.object({ id: z.uuid(), clientId: z.uuid() });

/** Users and their direct client assignments (docs/api/identity.md#administration). */
export function registerUserRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['users'] });
  route({
    method: 'GET',
    url: '/api/v1/users',
    subject: 'svc.identity.users.list',
    query: PageQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'POST',
    url: '/api/v1/users',
    subject: 'svc.identity.users.create',
    body: CreateUserBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'GET',
    url: '/api/v1/users/:id',
    subject: 'svc.identity.users.get',
    params: UserParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/users/:id',
    subject: 'svc.identity.users.update',
    params: UserParams,
    body: UpdateUserBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/users/:id',
    subject: 'svc.identity.users.disable',
    params: UserParams,
    input: ({ params }) => params,
    status: 204,
  });
  route({
    method: 'POST',
    url: '/api/v1/users/:id/resend-invite',
    subject: 'svc.identity.users.resend_invite',
    params: UserParams,
    input: ({ params }) => params,
  });
  route({
    method: 'POST',
    url: '/api/v1/users/:id/reset-password',
    subject: 'svc.identity.users.reset_password',
    params: UserParams,
    input: ({ params }) => params,
  });

  route({
    method: 'GET',
    url: '/api/v1/users/:id/clients',
    subject: 'svc.identity.users.clients.list',
    params: UserParams,
    input: ({ params }) => ({ user_id: params.id }),
  });
  route({
    method: 'POST',
    url: '/api/v1/users/:id/clients',
    subject: 'svc.identity.users.clients.assign',
    params: UserParams,
    body: AssignmentBody,
    input: ({ params, body }) => ({ user_id: params.id, client_id: body.client_id, role_id: body.role_id }),
    status: 201,
  });
  route({
    method: 'PUT',
    url: '/api/v1/users/:id/clients/:clientId',
    subject: 'svc.identity.users.clients.update',
    params: AssignmentParams,
    body: AssignmentRoleBody,
    input: ({ params, body: { role_id, ...sent } }) => ({
      user_id: params.id,
      client_id: params.clientId,
      role_id,
      sent,
    }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/users/:id/clients/:clientId',
    subject: 'svc.identity.users.clients.remove',
    params: AssignmentParams,
    input: ({ params }) => ({ user_id: params.id, client_id: params.clientId }),
    status: 204,
  });
}
