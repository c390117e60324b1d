import { z } from 'zod';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const InvoiceParams = z.object({ id: z.uuid() });

/**
 * sync-accounting (docs/api/invoicing.md#sync-accounting-actorsinvoiceaccounting): no body; 200 `{message}` once the
 * push is durably queued. Not `idempotent` through the gateway's store: the actor already makes a repeat harmless (a
 * queued job is published again under the same Nats-Msg-Id, a synced version is not pushed again).
 */
export function registerAccountingRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'user', tags: ['invoices'] });
  route({
    method: 'POST',
    url: '/api/v1/invoices/:id/sync-accounting',
    subject: 'svc.invoice.sync_accounting',
    params: InvoiceParams,
    input: ({ params }) => params,
  });
}
