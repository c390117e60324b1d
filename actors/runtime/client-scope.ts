import { hasPermission } from '../../contracts/access.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';

/**
 * Client scoping shared by every console domain (console-operations.md: "entity absent or out of the caller's scope"
 * is 404): a resource of a client the caller holds nothing on is 404, exactly like one that does not exist; a resource
 * of a client the caller reaches but without `permission` is 403.
 */
export function inReach(ctx: CallerContext, clientId: string): boolean {
  const access = ctx.access;
  if (!access) return false;
  return access.super_admin || access.all_clients.length > 0 || access.clients[clientId] !== undefined;
}

/** Throws 404 (`what` not found) out of reach, 403 in reach without `permission`. */
export function requireOnClient(ctx: CallerContext, clientId: string, permission: string, what: string): void {
  if (hasPermission(ctx, permission, clientId)) return;
  if (inReach(ctx, clientId)) throw new DomainError('forbidden', `missing permission ${permission} on this client`);
  throw new DomainError('not_found', `${what} not found`);
}
