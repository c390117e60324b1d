import { hasPermission } from '../contracts/access.ts';
import type { CallerContext } from '../contracts/context.ts';
import { DomainError } from '../contracts/errors.ts';

/**
 * Client and environment scoping shared by the domains (docs/api/conventions.md#console-tenant-scope): a resource the
 * caller holds nothing on is 404, exactly like one that does not exist; a resource in reach without the needed
 * permission is 403.
 */

/** Environment grants of the caller inside `clientId`, whatever their permissions. */
function environmentGrants(ctx: CallerContext, clientId: string): { id: string; permissions: string[] }[] {
  const envs = ctx.access?.environments;
  if (!envs) return [];
  return Object.entries(envs)
    .filter(([, g]) => g.client_id === clientId)
    .map(([id, g]) => ({ id, permissions: g.permissions }));
}

/** True when the caller holds anything on `clientId` (a grant on the client, or on one of its environments). */
export function inReach(ctx: CallerContext, clientId: string): boolean {
  const access = ctx.access;
  if (!access) return false;
  return (
    access.super_admin ||
    access.all_clients.length > 0 ||
    access.clients[clientId] !== undefined ||
    environmentGrants(ctx, clientId).length > 0
  );
}

/** Throws 404 (`what` not found) out of reach, 403 in reach without `permission` on the whole client. */
export function requireOnClient(ctx: CallerContext, clientId: string, permission: string, what: string): void {
  if (hasPermission(ctx, permission, clientId)) return;
  if (inReach(ctx, clientId)) throw new DomainError('forbidden', `missing permission ${permission} on this client`);
  throw new DomainError('not_found', `${what} not found`);
}

/** Where the caller holds `permission` within one client: the whole client, some of its environments, or nowhere. */
export type ClientGrant = { kind: 'client' } | { kind: 'environments'; ids: string[] } | { kind: 'none' };

export function grantIn(ctx: CallerContext, clientId: string, permission: string): ClientGrant {
  if (hasPermission(ctx, permission, clientId)) return { kind: 'client' };
  const ids = environmentGrants(ctx, clientId)
    .filter((g) => g.permissions.includes(permission))
    .map((g) => g.id);
  return ids.length > 0 ? { kind: 'environments', ids } : { kind: 'none' };
}

/** True when the caller holds anything on this environment of `clientId` (client-wide, or on the environment). */
export function inReachOfEnvironment(ctx: CallerContext, clientId: string, environmentId: string): boolean {
  const access = ctx.access;
  if (!access) return false;
  if (access.super_admin || access.all_clients.length > 0 || access.clients[clientId] !== undefined) return true;
  return access.environments?.[environmentId]?.client_id === clientId;
}

/** `permission` on one environment of a client: client-wide, or granted on that environment. */
export function hasOnEnvironment(
  ctx: CallerContext,
  permission: string,
  clientId: string,
  environmentId: string,
): boolean {
  if (hasPermission(ctx, permission, clientId)) return true;
  const g = ctx.access?.environments?.[environmentId];
  return g !== undefined && g.client_id === clientId && g.permissions.includes(permission);
}

/**
 * Where the caller holds `permission` across every client: `all` (super admins, all-client grants), or the clients
 * held client-wide and the environments held one by one (with their client).
 */
export interface Grants {
  all: boolean;
  clients: string[];
  environments: { id: string; client_id: string }[];
}

export function grantsOf(ctx: CallerContext, permission: string): Grants {
  const access = ctx.access;
  if (!access) return { all: false, clients: [], environments: [] };
  if (access.super_admin || access.all_clients.includes(permission))
    return { all: true, clients: [], environments: [] };
  const clients = Object.entries(access.clients)
    .filter(([, perms]) => perms.includes(permission))
    .map(([id]) => id);
  const held = new Set(clients);
  const environments = Object.entries(access.environments ?? {})
    .filter(([, g]) => g.permissions.includes(permission) && !held.has(g.client_id))
    .map(([id, g]) => ({ id, client_id: g.client_id }));
  return { all: false, clients, environments };
}

export const isEmptyGrant = (g: Grants): boolean => !g.all && g.clients.length === 0 && g.environments.length === 0;
