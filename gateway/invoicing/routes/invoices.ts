import { z } from 'zod';
import { GenerateBody, GenerateBulkBody, InvoiceListQuery, PrefillBody } from '../../../contracts/domains/invoice.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const InvoiceParams = z.object({ id: z.uuid() });

/**
 * Invoices (invoicing.md "Endpoints"). Every route needs a console access token of a signed-in user (the editor of a
 * change is taken from it); permissions (invoices:read / invoices:write) are checked by the invoice actors.
 */
export function registerInvoiceRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'user', tags: ['invoices'] });
  route({ method: 'POST', url: '/api/v1/invoices/prefill', subject: 'svc.invoice.prefill', body: PrefillBody, input: ({ body }) => body });
  // A create (201): Idempotency-Key is honoured by default.
  route({ method: 'POST', url: '/api/v1/invoices/generate', subject: 'svc.invoice.generate', body: GenerateBody, input: ({ body }) => body, status: 201 });
  route({ method: 'POST', url: '/api/v1/invoices/generate-bulk', subject: 'svc.invoice.generate_bulk', body: GenerateBulkBody, input: ({ body }) => body, idempotent: true });
  route({ method: 'GET', url: '/api/v1/invoices', subject: 'svc.invoice.list', query: InvoiceListQuery, input: ({ query }) => query, paged: true });
  route({ method: 'GET', url: '/api/v1/invoices/:id', subject: 'svc.invoice.get', params: InvoiceParams, input: ({ params }) => params });
}
