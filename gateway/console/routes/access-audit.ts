import { z } from 'zod';
import type { GatewayApp } from '../../shared/app.ts';
import { bridge, type GatewayDeps } from '../../shared/bridge.ts';

const tags = ['access-audit'];

/** Who reaches what and why (console-identity.md, Administration). */
export function registerAccessAuditRoutes(app: GatewayApp, deps: GatewayDeps): void {
  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/admin/access-audit/by-user/:userId',
    subject: 'svc.identity.access_audit.by_user',
    auth: 'authenticated',
    tags,
    params: z.object({ userId: z.uuid() }),
    input: ({ params }) => ({ user_id: params.userId }),
  });
  bridge(app, deps, {
    method: 'GET',
    url: '/api/v1/admin/access-audit/by-client/:clientId',
    subject: 'svc.identity.access_audit.by_client',
    auth: 'authenticated',
    tags,
    params: z.object({ clientId: z.uuid() }),
    input: ({ params }) => ({ client_id: params.clientId }),
  });
}
