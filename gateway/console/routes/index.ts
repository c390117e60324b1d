import { tsdbBases, type Config } from '../../../platform/config.ts';
import type { UploadStore } from '../../../actors/servicedesk/mod.ts';
import type { GatewayApp } from '../../shared/app.ts';
import type { GatewayDeps } from '../../shared/bridge.ts';
import { registerAdminRoutes } from './admin.ts';
import { registerAgentAdminRoutes } from './agents.ts';
import { registerAuthRoutes } from './auth.ts';
import { registerBrowserSessionRoutes } from './browser-session.ts';
import { registerChartRoutes } from './charts.ts';
import { registerClientRoutes } from './clients.ts';
import { registerEnrolmentRoutes } from './enrolment.ts';
import { registerWatchConfigRoutes } from './watch-config.ts';
import { registerEnvironmentRoutes } from './environments.ts';
import { registerHostRoutes } from './hosts.ts';
import { registerIntegrationRoutes } from './integrations.ts';
import { registerInventoryRoutes } from './inventory.ts';
import { registerMetricsRoutes } from './metrics.ts';
import { registerNotificationRoutes } from './notifications.ts';
import { registerSearchRoutes } from './search.ts';
import { registerSavedSearchRoutes } from './saved-searches.ts';
import { registerServiceDeskRoutes } from './service-desk.ts';
import { registerServiceDeskProxyRoutes } from './service-desk-proxy.ts';
import { registerReceiverRoutes } from './receivers.ts';
import { registerSsoConfigRoute, registerSsoRoutes } from './sso.ts';
import { registerVoiceRoutes } from './voice.ts';
import { registerReceiverAdminRoutes } from './webhook-endpoints.ts';

/** Every console route module, one per resource (gateway/console/routes/<resource>.ts). */
export async function registerConsoleRoutes(
  app: GatewayApp,
  deps: GatewayDeps,
  config: Config,
  uploads: UploadStore,
): Promise<void> {
  registerAuthRoutes(app, deps);
  registerBrowserSessionRoutes(app, deps, config);
  registerSsoConfigRoute(app, deps);
  // The SSO routes exist only when an SSO client id is configured.
  if (config.SVC_SSO_CLIENT_ID) registerSsoRoutes(app, deps);
  registerAdminRoutes(app, deps);
  registerClientRoutes(app, deps);
  registerEnrolmentRoutes(app, deps);
  registerWatchConfigRoutes(app, deps);
  registerEnvironmentRoutes(app, deps);
  registerHostRoutes(app, deps);
  registerAgentAdminRoutes(app, deps);
  registerInventoryRoutes(app, deps);
  registerIntegrationRoutes(app, deps);
  registerMetricsRoutes(app, deps, tsdbBases(config));
  registerSearchRoutes(app, deps);
  registerSavedSearchRoutes(app, deps);
  registerServiceDeskRoutes(app, deps);
  registerServiceDeskProxyRoutes(app, deps, uploads);
  registerReceiverAdminRoutes(app, deps);
  registerChartRoutes(app, deps);
  registerNotificationRoutes(app, deps);
  await registerReceiverRoutes(app, deps);
  await registerVoiceRoutes(app, deps);
}
