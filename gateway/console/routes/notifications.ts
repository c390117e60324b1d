import { z } from 'zod';
import {
  AckLinkBody,
  ChannelListQuery,
  CreateChannelBody,
  CreateRuleBody,
  CreateWindowBody,
  DeliveryListQuery,
  NotificationListQuery,
  OccurrencesQuery,
  RotateSecretBody,
  RuleListQuery,
  UpdateChannelBody,
  UpdateRuleBody,
  UpdateWindowBody,
  WindowListQuery,
} from '../../../contracts/domains/events-notifications.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const IdParams = z.object({ id: z.uuid() });
const byId = { params: IdParams, input: ({ params }: { params: { id: string } }) => params };

/**
 * Notifications (docs/api/notifications.md): channels, rules, maintenance windows, the notifications and their
 * deliveries, under `notifications:read|write`; and the signed acknowledgement link, which needs no sign-in.
 */
export function registerNotificationRoutes(app: GatewayApp, deps: GatewayDeps): void {
  registerChannelRoutes(app, deps);
  registerRuleAndWindowRoutes(app, deps);
  registerIncidentRoutes(app, deps);
}

/** Channels, their delivery logs, and redelivery. */
function registerChannelRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const channels = routeGroup(app, deps, { auth: 'authenticated', tags: ['notifications'] });
  channels({
    method: 'GET',
    url: '/api/v1/notification-channels',
    subject: 'svc.events.notification_channels.list',
    query: ChannelListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  channels({
    method: 'POST',
    url: '/api/v1/notification-channels',
    subject: 'svc.events.notification_channels.create',
    body: CreateChannelBody,
    input: ({ body }) => body,
    status: 201,
    // A webhook channel's secret is in the answer: no replay store keeps a copy.
    idempotent: false,
  });
  channels({
    method: 'GET',
    url: '/api/v1/notification-channels/:id',
    subject: 'svc.events.notification_channels.get',
    ...byId,
  });
  channels({
    method: 'PUT',
    url: '/api/v1/notification-channels/:id',
    subject: 'svc.events.notification_channels.update',
    params: IdParams,
    body: UpdateChannelBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  channels({
    method: 'DELETE',
    url: '/api/v1/notification-channels/:id',
    subject: 'svc.events.notification_channels.delete',
    ...byId,
    status: 204,
  });
  channels({
    method: 'POST',
    url: '/api/v1/notification-channels/:id/rotate-secret',
    subject: 'svc.events.notification_channels.rotate_secret',
    params: IdParams,
    body: RotateSecretBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  channels({
    method: 'POST',
    url: '/api/v1/notification-channels/:id/test',
    subject: 'svc.events.notification_channels.test',
    ...byId,
    status: 202,
  });
  channels({
    method: 'GET',
    url: '/api/v1/notification-channels/:id/deliveries',
    subject: 'svc.events.notification_channels.deliveries',
    params: IdParams,
    query: DeliveryListQuery,
    input: ({ params, query }) => ({ ...query, id: params.id }),
    paged: true,
  });
  channels({
    method: 'POST',
    url: '/api/v1/notification-deliveries/:id/redeliver',
    subject: 'svc.events.notification_deliveries.redeliver',
    ...byId,
    status: 202,
  });
}

/** Rules and maintenance windows. */
function registerRuleAndWindowRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const rules = routeGroup(app, deps, { auth: 'authenticated', tags: ['notifications'] });
  rules({
    method: 'GET',
    url: '/api/v1/notification-rules',
    subject: 'svc.events.notification_rules.list',
    query: RuleListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  rules({
    method: 'POST',
    url: '/api/v1/notification-rules',
    subject: 'svc.events.notification_rules.create',
    body: CreateRuleBody,
    input: ({ body }) => body,
    status: 201,
  });
  rules({
    method: 'GET',
    url: '/api/v1/notification-rules/:id',
    subject: 'svc.events.notification_rules.get',
    ...byId,
  });
  rules({
    method: 'PUT',
    url: '/api/v1/notification-rules/:id',
    subject: 'svc.events.notification_rules.update',
    params: IdParams,
    body: UpdateRuleBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  rules({
    method: 'DELETE',
    url: '/api/v1/notification-rules/:id',
    subject: 'svc.events.notification_rules.delete',
    ...byId,
    status: 204,
  });

  const windows = routeGroup(app, deps, { auth: 'authenticated', tags: ['notifications'] });
  windows({
    method: 'GET',
    url: '/api/v1/maintenance-windows',
    subject: 'svc.events.maintenance_windows.list',
    query: WindowListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  windows({
    method: 'POST',
    url: '/api/v1/maintenance-windows',
    subject: 'svc.events.maintenance_windows.create',
    body: CreateWindowBody,
    input: ({ body }) => body,
    status: 201,
  });
  windows({
    method: 'GET',
    url: '/api/v1/maintenance-windows/:id',
    subject: 'svc.events.maintenance_windows.get',
    ...byId,
  });
  windows({
    method: 'PUT',
    url: '/api/v1/maintenance-windows/:id',
    subject: 'svc.events.maintenance_windows.update',
    params: IdParams,
    body: UpdateWindowBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  windows({
    method: 'DELETE',
    url: '/api/v1/maintenance-windows/:id',
    subject: 'svc.events.maintenance_windows.delete',
    ...byId,
    status: 204,
  });
  windows({
    method: 'GET',
    url: '/api/v1/maintenance-windows/:id/occurrences',
    subject: 'svc.events.maintenance_windows.occurrences',
    params: IdParams,
    query: OccurrencesQuery,
    input: ({ params, query }) => ({ ...query, id: params.id }),
  });
}

/** The notifications, their acknowledgement, and the signed link's (no sign-in). */
function registerIncidentRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const notifications = routeGroup(app, deps, { auth: 'authenticated', tags: ['notifications'] });
  notifications({
    method: 'GET',
    url: '/api/v1/notifications',
    subject: 'svc.events.notifications.list',
    query: NotificationListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  notifications({ method: 'GET', url: '/api/v1/notifications/:id', subject: 'svc.events.notifications.get', ...byId });
  notifications({
    method: 'POST',
    url: '/api/v1/notifications/:id/acknowledge',
    subject: 'svc.events.notifications.acknowledge',
    ...byId,
  });

  const open = routeGroup(app, deps, { auth: 'public', tags: ['notifications'] });
  open({
    method: 'POST',
    url: '/api/v1/notifications/acknowledge-link',
    subject: 'svc.events.notifications.acknowledge_link',
    rate: 'auth',
    body: AckLinkBody,
    input: ({ body }) => body,
  });
}
