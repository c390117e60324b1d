import type { GatewayApp } from '../../shared/app.ts';
import type { GatewayDeps } from '../../shared/bridge.ts';

/** Every console route module, one per resource (gateway/console/routes/<resource>.ts). */
export async function registerConsoleRoutes(_app: GatewayApp, _deps: GatewayDeps): Promise<void> {}
