import { z } from 'zod';
import { CreateTeamBody, TeamClientBody, TeamMemberBody, TeamMemberRoleBody, UpdateTeamBody } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, PageQuery, type GatewayDeps } from '../../shared/bridge.ts';
import { sendPage } from './paging.ts';

const tags = ['teams'];
const TeamParams = z.object({ id: z.uuid() });
const MemberParams = z.object({ id: z.uuid(), userId: z.uuid() });
const ClientParams = z.object({ id: z.uuid(), clientId: z.uuid() });

/** Teams, their members and their clients (console-identity.md, Administration). */
export function registerTeamRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, { method: 'GET', url: '/api/v1/teams', subject: 'svc.identity.teams.list', auth: 'authenticated', tags, query: PageQuery, input: ({ query }) => query, send: sendPage });
  bridge(app, deps, { method: 'POST', url: '/api/v1/teams', subject: 'svc.identity.teams.create', auth: 'authenticated', tags, body: CreateTeamBody, input: ({ body }) => body, status: 201 });
  bridge(app, deps, { method: 'GET', url: '/api/v1/teams/:id', subject: 'svc.identity.teams.get', auth: 'authenticated', tags, params: TeamParams, input: ({ params }) => params });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/teams/:id',
    subject: 'svc.identity.teams.update',
    auth: 'authenticated',
    tags,
    params: TeamParams,
    body: UpdateTeamBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  bridge(app, deps, { method: 'DELETE', url: '/api/v1/teams/:id', subject: 'svc.identity.teams.delete', auth: 'authenticated', tags, params: TeamParams, input: ({ params }) => params, status: 204 });

  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/teams/:id/members',
    subject: 'svc.identity.teams.members.add',
    auth: 'authenticated',
    tags,
    params: TeamParams,
    body: TeamMemberBody,
    input: ({ params, body }) => ({ team_id: params.id, user_id: body.user_id, role_id: body.role_id }),
    status: 201,
  });
  bridge(app, deps, {
    method: 'PUT',
    url: '/api/v1/teams/:id/members/:userId',
    subject: 'svc.identity.teams.members.update',
    auth: 'authenticated',
    tags,
    params: MemberParams,
    body: TeamMemberRoleBody,
    input: ({ params, body }) => ({ team_id: params.id, user_id: params.userId, role_id: body.role_id }),
  });
  bridge(app, deps, {
    method: 'DELETE',
    url: '/api/v1/teams/:id/members/:userId',
    subject: 'svc.identity.teams.members.remove',
    auth: 'authenticated',
    tags,
    params: MemberParams,
    input: ({ params }) => ({ team_id: params.id, user_id: params.userId }),
    status: 204,
  });
  bridge(app, deps, {
    method: 'POST',
    url: '/api/v1/teams/:id/clients',
    subject: 'svc.identity.teams.clients.add',
    auth: 'authenticated',
    tags,
    params: TeamParams,
    body: TeamClientBody,
    input: ({ params, body }) => ({ team_id: params.id, client_id: body.client_id }),
    status: 201,
  });
  bridge(app, deps, {
    method: 'DELETE',
    url: '/api/v1/teams/:id/clients/:clientId',
    subject: 'svc.identity.teams.clients.remove',
    auth: 'authenticated',
    tags,
    params: ClientParams,
    input: ({ params }) => ({ team_id: params.id, client_id: params.clientId }),
    status: 204,
  });
}
