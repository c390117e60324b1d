import type { GatewayApp } from '../../shared/app.ts';
import type { GatewayDeps } from '../../shared/bridge.ts';

export function registerClientRoutes(_app: GatewayApp, _deps: GatewayDeps): void {}
