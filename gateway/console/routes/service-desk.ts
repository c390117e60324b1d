import { z } from 'zod';
import {
  CreateMappingBody,
  IssueKey,
  MappingListQuery,
  MetricsRangeQuery,
  MetricsScopeQuery,
  OneRequestQuery,
  OrganizationListQuery,
  TicketFilters,
  TicketListQuery,
  UpdateMappingBody,
} from '../../../contracts/domains/servicedesk.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { PageQuery, routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const BASE = '/api/v1/service-desk';
const MappingParams = z.object({ id: z.uuid() });
const KeyParams = z.object({ issueKey: IssueKey });

/**
 * Service desk (docs/api/service-desk.md): organization mappings, the read store's routes and the admin
 * sync trigger. Permissions, client scope and the super-admin organization filter are checked by the actors.
 */
export function registerServiceDeskRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['service-desk'] });

  // Organization mappings (servicedeskconfig:*)
  route({
    method: 'GET',
    url: `${BASE}/admin/organizations`,
    subject: 'svc.servicedesk.mappings.list',
    query: MappingListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'POST',
    url: `${BASE}/admin/organizations`,
    subject: 'svc.servicedesk.mappings.create',
    body: CreateMappingBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'PUT',
    url: `${BASE}/admin/organizations/:id`,
    subject: 'svc.servicedesk.mappings.update',
    params: MappingParams,
    body: UpdateMappingBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'DELETE',
    url: `${BASE}/admin/organizations/:id`,
    subject: 'svc.servicedesk.mappings.delete',
    params: MappingParams,
    input: ({ params }) => params,
    status: 204,
  });
  route({ method: 'POST', url: `${BASE}/admin/sync`, subject: 'svc.servicedesk.sync.run', input: () => ({}) });
  route({
    method: 'GET',
    url: `${BASE}/organizations`,
    subject: 'svc.servicedesk.organizations.list',
    query: OrganizationListQuery,
    input: ({ query }) => query,
    paged: true,
  });

  // The read store
  route({
    method: 'GET',
    url: `${BASE}/tickets`,
    subject: 'svc.servicedesk.tickets.list',
    query: TicketListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'GET',
    url: `${BASE}/tickets/:issueKey`,
    subject: 'svc.servicedesk.tickets.get',
    params: KeyParams,
    query: OneRequestQuery,
    input: ({ params, query }) => ({ issue_key: params.issueKey, ...query }),
  });
  route({
    method: 'GET',
    url: `${BASE}/tickets/:issueKey/actions`,
    subject: 'svc.servicedesk.actions.list',
    params: KeyParams,
    query: PageQuery.extend(OneRequestQuery.shape),
    input: ({ params, query }) => ({ issue_key: params.issueKey, ...query }),
    paged: true,
  });
  route({
    method: 'GET',
    url: `${BASE}/kanban`,
    subject: 'svc.servicedesk.kanban',
    query: TicketFilters,
    input: ({ query }) => query,
  });
  route({
    method: 'GET',
    url: `${BASE}/metrics/sla`,
    subject: 'svc.servicedesk.metrics.sla',
    query: MetricsRangeQuery,
    input: ({ query }) => query,
  });
  route({
    method: 'GET',
    url: `${BASE}/metrics/delivery`,
    subject: 'svc.servicedesk.metrics.delivery',
    query: MetricsRangeQuery,
    input: ({ query }) => query,
  });
  route({
    method: 'GET',
    url: `${BASE}/metrics/summary`,
    subject: 'svc.servicedesk.metrics.summary',
    query: MetricsScopeQuery,
    input: ({ query }) => query,
  });
  route({
    method: 'GET',
    url: `${BASE}/reports/export`,
    subject: 'svc.servicedesk.export',
    query: TicketFilters,
    input: ({ query }) => query,
    // A CSV download, not the JSON envelope.
    send: (data, reply) =>
      reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${data.filename}"`)
        .header('x-export-rows', String(data.rows))
        .send(data.csv),
  });
}
