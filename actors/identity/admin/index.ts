import type { DomainContext, DomainHandle } from '../../../platform/domain.ts';
import type { IdentityDeps } from '../deps.ts';
import { accessAuditHandlers } from './access-audit.ts';
import { auditLogHandlers } from './audit-log.ts';
import { roleHandlers } from './roles.ts';
import { serviceAccountHandlers } from './service-accounts.ts';
import { teamHandlers } from './teams.ts';
import { userHandlers } from './users.ts';

/**
 * The admin actor: users and their direct client assignments, teams, roles and the permission registry, the access
 * audit, service accounts and the audit log. Every handler authorizes with the caller context itself.
 */
export async function startAdminActors(deps: IdentityDeps, domain: DomainContext): Promise<DomainHandle> {
  await domain.host.serve('identity', 'identity-admin', {
    ...userHandlers(deps),
    ...teamHandlers(deps),
    ...roleHandlers(deps),
    ...accessAuditHandlers(deps),
    ...serviceAccountHandlers(deps),
    ...auditLogHandlers(deps),
  });
  return { stop: async () => undefined };
}
