import { z } from 'zod';
import {
  AlertSourceListQuery,
  CreateAlertSourceBody,
  CreateWebhookEndpointBody,
  RejectedListQuery,
  UpdateAlertSourceBody,
  UpdateWebhookEndpointBody,
  WebhookEndpointListQuery,
} from '../../../contracts/domains/events.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const IdParams = z.object({ id: z.uuid() });

/**
 * Receivers of external events, managed per client: webhook endpoints (`webhooks:*`) and alert sources
 * (`alertsources:*`). Creation and token rotation answer the token once, so no Idempotency-Key replay keeps a copy.
 */
export function registerReceiverAdminRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const hooks = routeGroup(app, deps, { auth: 'authenticated', tags: ['webhooks'] });
  hooks({
    method: 'GET',
    url: '/api/v1/webhook-endpoints',
    subject: 'svc.events.webhook_endpoints.list',
    query: WebhookEndpointListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  hooks({
    method: 'POST',
    url: '/api/v1/webhook-endpoints',
    subject: 'svc.events.webhook_endpoints.create',
    body: CreateWebhookEndpointBody,
    input: ({ body }) => body,
    status: 201,
    idempotent: false,
  });
  hooks({
    method: 'GET',
    url: '/api/v1/webhook-endpoints/:id',
    subject: 'svc.events.webhook_endpoints.get',
    params: IdParams,
    input: ({ params }) => params,
  });
  hooks({
    method: 'PUT',
    url: '/api/v1/webhook-endpoints/:id',
    subject: 'svc.events.webhook_endpoints.update',
    params: IdParams,
    body: UpdateWebhookEndpointBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  hooks({
    method: 'DELETE',
    url: '/api/v1/webhook-endpoints/:id',
    subject: 'svc.events.webhook_endpoints.delete',
    params: IdParams,
    input: ({ params }) => params,
    status: 204,
  });
  hooks({
    method: 'GET',
    url: '/api/v1/webhook-endpoints/:id/rejected-deliveries',
    subject: 'svc.events.webhook_endpoints.rejected',
    params: IdParams,
    query: RejectedListQuery,
    input: ({ params, query }) => ({ id: params.id, ...query }),
    paged: true,
  });

  const sources = routeGroup(app, deps, { auth: 'authenticated', tags: ['alert-sources'] });
  sources({
    method: 'GET',
    url: '/api/v1/alert-sources',
    subject: 'svc.events.alert_sources.list',
    query: AlertSourceListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  sources({
    method: 'POST',
    url: '/api/v1/alert-sources',
    subject: 'svc.events.alert_sources.create',
    body: CreateAlertSourceBody,
    input: ({ body }) => body,
    status: 201,
    idempotent: false,
  });
  sources({
    method: 'GET',
    url: '/api/v1/alert-sources/:id',
    subject: 'svc.events.alert_sources.get',
    params: IdParams,
    input: ({ params }) => params,
  });
  sources({
    method: 'PUT',
    url: '/api/v1/alert-sources/:id',
    subject: 'svc.events.alert_sources.update',
    params: IdParams,
    body: UpdateAlertSourceBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  sources({
    method: 'DELETE',
    url: '/api/v1/alert-sources/:id',
    subject: 'svc.events.alert_sources.delete',
    params: IdParams,
    input: ({ params }) => params,
    status: 204,
  });
  sources({
    method: 'GET',
    url: '/api/v1/alert-sources/:id/rejected-deliveries',
    subject: 'svc.events.alert_sources.rejected',
    params: IdParams,
    query: RejectedListQuery,
    input: ({ params, query }) => ({ id: params.id, ...query }),
    paged: true,
  });
}
