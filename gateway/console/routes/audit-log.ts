import { AuditLogQuery } from '../../../contracts/domains/identity-admin.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, type GatewayDeps } from '../../shared/bridge.ts';
import { sendPage } from './paging.ts';

/** The audit log with its filters (console-identity.md, Administration). */
export function registerAuditLogRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, { method: 'GET', url: '/api/v1/audit-log', subject: 'svc.identity.audit.list', auth: 'authenticated', tags: ['audit'], query: AuditLogQuery, input: ({ query }) => query, send: sendPage });
}
