import { z } from 'zod';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, type GatewayDeps } from '../../shared/bridge.ts';

const InvoiceParams = z.object({ id: z.uuid() });

/**
 * Invoice documents (docs/api/invoicing.md#template-actorsinvoicerender): the HTML preview. The body is the invoice's
 * own HTML (an html_override is any HTML a user wrote), so it is served sandboxed: no script runs and nothing loads on
 * this API's origin.
 */
export function registerDocumentRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'user', tags: ['invoices'] });
  route({
    method: 'GET',
    url: '/api/v1/invoices/:id/preview-html',
    subject: 'svc.invoice.preview_html',
    params: InvoiceParams,
    input: ({ params }) => params,
    send: (data, reply) =>
      reply
        .header('content-type', 'text/html; charset=utf-8')
        .header(
          'content-security-policy',
          "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:",
        )
        // The preview is a page meant to be framed (by the console's front end): only its sandbox policy applies.
        .removeHeader('x-frame-options')
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'no-store')
        .send(data.html),
  });
}

/** finalize, regenerate and the PDF. The PDF crosses NATS as base64 in the reply; the route writes the bytes. */
export function registerPdfRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const route = routeGroup(app, deps, { auth: 'user', tags: ['invoices'] });
  route({
    method: 'PUT',
    url: '/api/v1/invoices/:id/regenerate',
    subject: 'svc.invoice.regenerate',
    params: InvoiceParams,
    input: ({ params }) => params,
  });
  route({
    method: 'POST',
    url: '/api/v1/invoices/:id/finalize',
    subject: 'svc.invoice.finalize',
    params: InvoiceParams,
    input: ({ params }) => params,
  });
  route({
    method: 'GET',
    url: '/api/v1/invoices/:id/pdf',
    subject: 'svc.invoice.pdf',
    params: InvoiceParams,
    input: ({ params }) => params,
    send: (data, reply) =>
      reply
        .header('content-type', 'application/pdf')
        .header('content-disposition', `inline; filename="${data.filename.replace(/[^A-Za-z0-9._-]/g, '_')}"`)
        .header('etag', `"${data.sha256}"`)
        .header('x-content-type-options', 'nosniff')
        .send(Buffer.from(data.content_base64, 'base64')),
  });
}
