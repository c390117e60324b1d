import { z } from 'zod';
import {
  GenerateBody,
  GenerateBulkBody,
  InvoiceListQuery,
  LineItemsBody,
  PrefillBody,
  REVIEW_ACTIONS,
  ReviewBody,
  UpdateInvoiceBody,
} from '../../../contracts/domains/invoice.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const InvoiceParams = z.object({ id: z.uuid() });

/**
 * Invoices (docs/api/invoicing.md#api-notes). Every route needs a console access token of a signed-in user (the editor
 * of a change is taken from it); permissions (invoices:read / invoices:write) are checked by the invoice actors.
 */
export function registerInvoiceRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'user', tags: ['invoices'] });
  route({
    method: 'POST',
    url: '/api/v1/invoices/prefill',
    subject: 'svc.invoice.prefill',
    body: PrefillBody,
    input: ({ body }) => body,
  });
  // A create (201): Idempotency-Key is honoured by default.
  route({
    method: 'POST',
    url: '/api/v1/invoices/generate',
    subject: 'svc.invoice.generate',
    body: GenerateBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'POST',
    url: '/api/v1/invoices/generate-bulk',
    subject: 'svc.invoice.generate_bulk',
    body: GenerateBulkBody,
    input: ({ body }) => body,
    idempotent: true,
  });
  route({
    method: 'GET',
    url: '/api/v1/invoices',
    subject: 'svc.invoice.list',
    query: InvoiceListQuery,
    input: ({ query }) => query,
    paged: true,
  });
  route({
    method: 'GET',
    url: '/api/v1/invoices/:id',
    subject: 'svc.invoice.get',
    params: InvoiceParams,
    input: ({ params }) => params,
  });
  route({
    method: 'PATCH',
    url: '/api/v1/invoices/:id',
    subject: 'svc.invoice.update',
    params: InvoiceParams,
    body: UpdateInvoiceBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'PATCH',
    url: '/api/v1/invoices/:id/line-items',
    subject: 'svc.invoice.line_items.update',
    params: InvoiceParams,
    body: LineItemsBody,
    input: ({ params, body }) => ({ ...body, id: params.id }),
  });
  route({
    method: 'GET',
    url: '/api/v1/invoices/:id/edit-history',
    subject: 'svc.invoice.edit_history',
    params: InvoiceParams,
    input: ({ params }) => params,
  });
  // Review moves: the body is optional; `{comment}` is kept in the edit history.
  for (const action of REVIEW_ACTIONS) {
    route({
      method: 'POST',
      url: `/api/v1/invoices/:id/${action}`,
      subject: 'svc.invoice.review',
      operationId: `invoice_review_${action}`,
      params: InvoiceParams,
      body: ReviewBody.nullish(),
      input: ({ params, body }) => ({
        id: params.id,
        action,
        ...(body?.comment !== undefined ? { comment: body.comment } : {}),
      }),
    });
  }
}
