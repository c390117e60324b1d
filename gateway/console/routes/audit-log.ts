import { AuditLogQuery } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

/** The audit log with its filters (docs/api/identity.md#administration). */
export function registerAuditLogRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['audit'] });
  route({
    method: 'GET',
    url: '/api/v1/audit-log',
    subject: 'svc.identity.audit.list',
    query: AuditLogQuery,
    input: ({ query }) => query,
    paged: true,
  });
}
