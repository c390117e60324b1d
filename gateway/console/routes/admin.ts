import type { GatewayApp } from '../../shared/app.ts';
import type { GatewayDeps } from '../../shared/bridge.ts';
import { registerAccessAuditRoutes } from './access-audit.ts';
import { registerAuditLogRoutes } from './audit-log.ts';
import { registerRoleRoutes } from './roles.ts';
import { registerServiceAccountRoutes } from './service-accounts.ts';
import { registerTeamRoutes } from './teams.ts';
import { registerUserRoutes } from './users.ts';

/**
 * Administration routes. Every route accepts a JWT or an API key; the permission (users:*, teams:*, roles:*,
 * audit:read) is checked by the identity actors with the caller context.
 */
export function registerAdminRoutes(app: GatewayApp, deps: GatewayDeps): void {
  registerUserRoutes(app, deps);
  registerTeamRoutes(app, deps);
  registerRoleRoutes(app, deps);
  registerServiceAccountRoutes(app, deps);
  registerAccessAuditRoutes(app, deps);
  registerAuditLogRoutes(app, deps);
}
