import { z } from 'zod';
import { CreateRoleBody, UpdateRoleBody } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const RoleParams = z.object({ id: z.uuid() });

/** Roles and the permission registry (docs/api/identity.md#system-roles, #administration). */
export function registerRoleRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['roles'] });
  route({ method: 'GET', url: '/api/v1/roles', subject: 'svc.identity.roles.list', input: () => ({}) });
  route({
    method: 'POST',
    url: '/api/v1/roles',
    subject: 'svc.identity.roles.create',
    body: CreateRoleBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'GET',
    url: '/api/v1/roles/:id',
    subject: 'svc.identity.roles.get',
    params: RoleParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/roles/:id',
    subject: 'svc.identity.roles.update',
    params: RoleParams,
    body: UpdateRoleBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/roles/:id',
    subject: 'svc.identity.roles.delete',
    params: RoleParams,
    input: ({ params }) => params,
    status: 204,
  });
  route({
    method: 'GET',
    url: '/api/v1/roles/:id/usage',
    subject: 'svc.identity.roles.usage',
    params: RoleParams,
    input: ({ params }) => params,
  });
  route({
    method: 'GET',
    url: '/api/v1/permissions',
    subject: 'svc.identity.permissions.list',
    tags: ['permissions'],
    input: () => ({}),
  });
}
