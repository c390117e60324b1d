import type { AuditEntry } from '../../../contracts/streams.ts';

/**
 * The actions an audit entry stands for in a rule: its own, and the derived ones a rule can name for what an entry
 * says only in its details — a user made super admin (`user.updated` with is_super_admin turned on), a service
 * account's key created (with the account: `service_account.created`).
 */
export function auditActionsOf(e: Pick<AuditEntry, 'action' | 'details'>): string[] {
  const actions = [e.action];
  if (e.action === 'user.updated' && superAdminTurnedOn(e.details)) actions.push('user.super_admin_granted');
  if (e.action === 'service_account.created') actions.push('service_account.key_created');
  return actions;
}

function superAdminTurnedOn(details: Record<string, unknown>): boolean {
  const changes = details.changes;
  if (typeof changes !== 'object' || changes === null) return false;
  const flag = (changes as Record<string, unknown>).is_super_admin;
  return typeof flag === 'object' && flag !== null && (flag as Record<string, unknown>).to === true;
}

/** How an entry is named in a message: the action, who did it, and on what. */
export function auditTitle(
  e: Pick<AuditEntry, 'action' | 'actor_email' | 'actor_type' | 'resource_type' | 'resource_id'>,
  action: string,
): string {
  const who =
    e.actor_email ?? (e.actor_type === 'anonymous' ? 'an anonymous caller' : `a ${e.actor_type.replace('_', ' ')}`);
  const what = e.resource_id ? `${e.resource_type} ${e.resource_id}` : e.resource_type;
  return `Audit: ${action} by ${who} (${what})`;
}
