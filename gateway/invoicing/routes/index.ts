import type { GatewayApp } from '../../shared/app.ts';
import type { GatewayDeps } from '../../shared/bridge.ts';

/** Every invoicing route module (gateway/invoicing/routes/<resource>.ts). */
export async function registerInvoicingRoutes(_app: GatewayApp, _deps: GatewayDeps): Promise<void> {}
