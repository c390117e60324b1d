import { z } from 'zod';
import { CreateRoleBody, UpdateRoleBody } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, type GatewayDeps } from '../../shared/bridge.ts';

const tags = ['roles'];
const RoleParams = z.object({ id: z.uuid() });

/** Roles and the permission registry (console-identity.md, Administration). */
export function registerRoleRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, { method: 'GET', url: '/api/v1/roles', subject: 'svc.identity.roles.list', auth: 'authenticated', tags, input: () => ({}) });
  bridge(app, deps, { method: 'POST', url: '/api/v1/roles', subject: 'svc.identity.roles.create', auth: 'authenticated', tags, body: CreateRoleBody, input: ({ body }) => body, status: 201 });
  bridge(app, deps, { method: 'GET', url: '/api/v1/roles/:id', subject: 'svc.identity.roles.get', auth: 'authenticated', tags, params: RoleParams, input: ({ params }) => params });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/roles/:id',
    subject: 'svc.identity.roles.update',
    auth: 'authenticated',
    tags,
    params: RoleParams,
    body: UpdateRoleBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  bridge(app, deps, { method: 'DELETE', url: '/api/v1/roles/:id', subject: 'svc.identity.roles.delete', auth: 'authenticated', tags, params: RoleParams, input: ({ params }) => params, status: 204 });
  bridge(app, deps, { method: 'GET', url: '/api/v1/roles/:id/usage', subject: 'svc.identity.roles.usage', auth: 'authenticated', tags, params: RoleParams, input: ({ params }) => params });
  bridge(app, deps, { method: 'GET', url: '/api/v1/permissions', subject: 'svc.identity.permissions.list', auth: 'authenticated', tags: ['permissions'], input: () => ({}) });
}
