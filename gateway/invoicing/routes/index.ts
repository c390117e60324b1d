import type { GatewayApp } from '../../shared/app.ts';
import type { GatewayDeps } from '../../shared/bridge.ts';
import { registerAccountingRoutes } from './accounting.ts';
import { registerDocumentRoutes, registerPdfRoutes } from './documents.ts';
import { registerInvoiceRoutes } from './invoices.ts';

/** Every invoicing route module (gateway/invoicing/routes/<resource>.ts). */
export async function registerInvoicingRoutes(app: GatewayApp, deps: GatewayDeps): Promise<void> {
  registerInvoiceRoutes(app, deps);
  registerDocumentRoutes(app, deps);
  registerPdfRoutes(app, deps);
  registerAccountingRoutes(app, deps);
}
