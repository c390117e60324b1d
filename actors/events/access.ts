import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { CallOptions } from '../../platform/call.ts';
import {
  grantIn,
  grantsOf,
  hasOnEnvironment,
  inReach,
  inReachOfEnvironment,
  type ClientGrant,
  type Grants,
} from '../../platform/scope.ts';
import type { FleetDirectory } from './fleet-directory.ts';

/**
 * Environment-aware scoping of the events domain (docs/api/events.md#environment-scoped-grants: notes and markers are
 * "environment-aware"; 404 for what the caller cannot read, docs/api/conventions.md#console-tenant-scope). A grant on a
 * client covers all of it; a grant on an environment covers that environment's rows and the client-wide rows (no
 * environment) of its client, which every reader of the client sees.
 */

/** The one chart (or timeline filter) a query names, with where it sits. */
export interface Target {
  kind: 'host' | 'environment' | 'client';
  id: string;
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
}

/** Resolves the target through the fleet: 404 when it does not exist or lies outside everything the caller holds. */
export async function resolveTarget(
  fleet: FleetDirectory,
  ctx: CallerContext,
  q: { host_id?: string | undefined; environment_id?: string | undefined; client_id?: string | undefined },
  opts: CallOptions,
): Promise<Target> {
  if (q.host_id !== undefined) {
    const h = await fleet.host(ctx, q.host_id, opts);
    if (!h || !inReachOfEnvironment(ctx, h.client_id, h.environment_id))
      throw new DomainError('not_found', 'host not found');
    return { kind: 'host', id: h.id, client_id: h.client_id, environment_id: h.environment_id, host_id: h.id };
  }
  if (q.environment_id !== undefined) {
    const e = await fleet.environment(ctx, q.environment_id, opts);
    if (!e || !inReachOfEnvironment(ctx, e.client_id, e.id))
      throw new DomainError('not_found', 'environment not found');
    return { kind: 'environment', id: e.id, client_id: e.client_id, environment_id: e.id, host_id: null };
  }
  if (q.client_id !== undefined) {
    if (!inReach(ctx, q.client_id)) throw new DomainError('not_found', 'client not found');
    const c = await fleet.client(ctx, q.client_id, opts);
    if (!c) throw new DomainError('not_found', 'client not found');
    return { kind: 'client', id: c.id, client_id: c.id, environment_id: null, host_id: null };
  }
  throw new DomainError('bad_request', 'give exactly one of host_id, environment_id, client_id');
}

/**
 * True when the caller holds `permission` on the target: on a host or environment, client-wide or on that
 * environment; on a client, client-wide or on any of its environments (the rows are then limited, see rowGrant).
 */
export function holdsOn(ctx: CallerContext, permission: string, t: Target): boolean {
  if (t.environment_id !== null) return hasOnEnvironment(ctx, permission, t.client_id, t.environment_id);
  return grantIn(ctx, t.client_id, permission).kind !== 'none';
}

export function requireOn(ctx: CallerContext, permission: string, t: Target): void {
  if (!holdsOn(ctx, permission, t))
    throw new DomainError('forbidden', `missing permission ${permission} on this ${t.kind}`);
}

/** Which rows of the target's client a reader with `permission` sees. */
export const rowGrant = (ctx: CallerContext, permission: string, t: Target): ClientGrant =>
  grantIn(ctx, t.client_id, permission);

/**
 * `AND …` limiting rows of one client to a grant (`env` is the row's environment column): nothing for a client-wide
 * grant; the granted environments and the client-wide rows for environment grants. Parameters are appended to `params`.
 */
export function grantFilter(g: ClientGrant, env: string, params: unknown[]): string {
  if (g.kind === 'client') return '';
  if (g.kind === 'none') return ' AND false';
  params.push(g.ids);
  return ` AND (${env} IS NULL OR ${env} IN (?))`;
}

/**
 * A condition over rows of every client for a caller's grants (`client`, `env`: the row's columns): the clients held
 * whole, the environments held one by one, and the client-wide rows of those environments' clients.
 */
export function grantsCondition(g: Grants, client: string, env: string, params: unknown[]): string {
  if (g.all) return 'true';
  const parts: string[] = [];
  if (g.clients.length > 0) {
    parts.push(`${client} IN (?)`);
    params.push(g.clients);
  }
  if (g.environments.length > 0) {
    parts.push(`${env} IN (?)`);
    params.push(g.environments.map((e) => e.id));
    parts.push(`(${env} IS NULL AND ${client} IN (?))`);
    params.push([...new Set(g.environments.map((e) => e.client_id))]);
  }
  return parts.length > 0 ? `(${parts.join(' OR ')})` : 'false';
}

export { grantsOf };
