import { z } from 'zod';
import {
  CreateTeamBody,
  TeamClientBody,
  TeamMemberBody,
  TeamMemberRoleBody,
  UpdateTeamBody,
} from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { PageQuery, routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const TeamParams = z.object({ id: z.uuid() });
const MemberParams = z.object({ id: z.uuid(), userId: z.uuid() });
const ClientParams = z.object({ id: z.uuid(), clientId: z.uuid() });

/** Teams, their members and their clients (docs/api/identity.md#administration). */
export function registerTeamRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['teams'] });
  route({
    method: 'GET',
    url: '/api/v1/teams',
    subject: 'svc.identity.teams.list',
    query: PageQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'POST',
    url: '/api/v1/teams',
    subject: 'svc.identity.teams.create',
    body: CreateTeamBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'GET',
    url: '/api/v1/teams/:id',
    subject: 'svc.identity.teams.get',
    params: TeamParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PUT',
    url: '/api/v1/teams/:id',
    subject: 'svc.identity.teams.update',
    params: TeamParams,
    body: UpdateTeamBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/teams/:id',
    subject: 'svc.identity.teams.delete',
    params: TeamParams,
    input: ({ params }) => params,
    status: 204,
  });

  route({
    method: 'POST',
    url: '/api/v1/teams/:id/members',
    subject: 'svc.identity.teams.members.add',
    params: TeamParams,
    body: TeamMemberBody,
    input: ({ params, body }) => ({ team_id: params.id, user_id: body.user_id, role_id: body.role_id }),
    status: 201,
  });
  route({
    method: 'PUT',
    url: '/api/v1/teams/:id/members/:userId',
    subject: 'svc.identity.teams.members.update',
    params: MemberParams,
    body: TeamMemberRoleBody,
    input: ({ params, body: { role_id, ...sent } }) => ({ team_id: params.id, user_id: params.userId, role_id, sent }),
  });
  route({
    method: 'DELETE',
    url: '/api/v1/teams/:id/members/:userId',
    subject: 'svc.identity.teams.members.remove',
    params: MemberParams,
    input: ({ params }) => ({ team_id: params.id, user_id: params.userId }),
    status: 204,
  });
  route({
    method: 'POST',
    url: '/api/v1/teams/:id/clients',
    subject: 'svc.identity.teams.clients.add',
    params: TeamParams,
    body: TeamClientBody,
    input: ({ params, body }) => ({ team_id: params.id, client_id: body.client_id }),
    status: 201,
  });
  route({
    method: 'DELETE',
    url: '/api/v1/teams/:id/clients/:clientId',
    subject: 'svc.identity.teams.clients.remove',
    params: ClientParams,
    input: ({ params }) => ({ team_id: params.id, client_id: params.clientId }),
    status: 204,
  });
}
