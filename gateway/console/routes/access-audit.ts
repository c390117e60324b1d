import { z } from 'zod';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

/** Who reaches what and why (docs/api/identity.md#administration). */
export function registerAccessAuditRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['access-audit'] });
  route({
    method: 'GET',
    url: '/api/v1/admin/access-audit/by-user/:userId',
    subject: 'svc.identity.access_audit.by_user',
    params: z.object({ userId: z.uuid() }),
    input: ({ params }) => ({ user_id: params.userId }),
  });
  route({
    method: 'GET',
    url: '/api/v1/admin/access-audit/by-client/:clientId',
    subject: 'svc.identity.access_audit.by_client',
    params: z.object({ clientId: z.uuid() }),
    input: ({ params }) => ({ client_id: params.clientId }),
  });
}
