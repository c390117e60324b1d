import type { CallerContext } from './context.ts';
import { DomainError } from './errors.ts';

/**
 * Authorization over a caller context, used by every domain's actors.
 * - A check with a client id needs the permission on that client (or on all clients, or super admin).
 * - A check without a client id (administration: users, roles, teams...) passes when the permission is held on any
 *   client or on all clients.
 */
export function hasPermission(ctx: CallerContext, permission: string, clientId?: string): boolean {
  const access = ctx.access;
  if (!access) return false;
  if (access.super_admin) return true;
  if (access.all_clients.includes(permission)) return true;
  if (clientId !== undefined) return access.clients[clientId]?.includes(permission) ?? false;
  return Object.values(access.clients).some((perms) => perms.includes(permission));
}

export function requirePermission(ctx: CallerContext, permission: string, clientId?: string): void {
  if (!hasPermission(ctx, permission, clientId))
    throw new DomainError('forbidden', `missing permission ${permission}${clientId ? ' on this client' : ''}`);
}

/** Clients on which the caller holds `permission`: `'all'` for super admins and all-client grants. */
export function clientsWith(ctx: CallerContext, permission: string): 'all' | string[] {
  const access = ctx.access;
  if (!access) return [];
  if (access.super_admin || access.all_clients.includes(permission)) return 'all';
  return Object.entries(access.clients)
    .filter(([, perms]) => perms.includes(permission))
    .map(([id]) => id);
}

export function requireUser(ctx: CallerContext): Extract<CallerContext['principal'], { kind: 'user' }> {
  if (ctx.principal.kind !== 'user')
    throw new DomainError(
      ctx.principal.kind === 'anonymous' ? 'unauthorized' : 'forbidden',
      'this action needs a signed-in user',
    );
  return ctx.principal;
}
