import type { EntityManager } from '@mikro-orm/postgresql';
import { clientsWith, hasPermission, requirePermission } from '../../contracts/access.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { DomainError } from '../../contracts/errors.ts';
import { inReach, requireOnClient } from '../../platform/scope.ts';
import { sql } from '../../platform/stores/sql.ts';

/**
 * Who sees which requests. A mapping ties a client to a tracker organization; within it the client sees the requests
 * of the mapping's support projects and, when the mapping names labels, only those carrying one of them. A caller
 * reaches the mappings of the clients it holds the permission on (super admins and all-client grants: every mapping).
 */

export interface MappingRow {
  id: string;
  client_id: string;
  organization_id: string;
  organization_name: string;
  service_desk_ids: string[];
  project_keys: string[];
  labels: string[];
  created_at: string;
  updated_at: string;
}
export const MAPPING_COLUMNS =
  'id, client_id, organization_id, organization_name, service_desk_ids, project_keys, labels, created_at, updated_at';

/** A PostgreSQL array literal for a `?::text[]` parameter (the driver would spread a JS array into a list). */
export function pgTextArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`).join(',')}}`;
}

export interface ScopeFilter {
  organization_id?: string | undefined;
  client_id?: string | undefined;
}

/** Whether the caller must name an organization: super admins (whose scope is everything) on the read routes. */
export function requireOrganizationFilter(ctx: CallerContext, filter: ScopeFilter): void {
  if (ctx.access?.super_admin && !filter.organization_id) {
    throw new DomainError('bad_request', 'super admins must filter by organization: add organization_id to the query');
  }
}

/**
 * The mappings the caller may use with `permission`, narrowed by the filter: 403 without the permission anywhere, 404
 * for a client or organization out of reach.
 */
export async function mappingsFor(
  em: EntityManager,
  ctx: CallerContext,
  permission: string,
  filter: ScopeFilter,
): Promise<MappingRow[]>;
/**
 * `withPending`: each mapping also says whether its organization has writes waiting for the sync (sd_pending), in the
 * same statement: the ticket reads need both before anything else, and asked one after the other they cost a round trip more.
 */
export async function mappingsFor(
  em: EntityManager,
  ctx: CallerContext,
  permission: string,
  filter: ScopeFilter,
  opts: { withPending: true },
): Promise<(MappingRow & { has_pending: boolean })[]>;
export async function mappingsFor(
  em: EntityManager,
  ctx: CallerContext,
  permission: string,
  filter: ScopeFilter,
  opts?: { withPending: true },
): Promise<MappingRow[]> {
  requirePermission(ctx, permission);
  if (filter.client_id) requireOnClient(ctx, filter.client_id, permission, 'client');
  const scope = clientsWith(ctx, permission);
  const where: string[] = [];
  const params: unknown[] = [];
  if (scope !== 'all') {
    if (scope.length === 0) return [];
    where.push('client_id IN (?)');
    params.push(scope);
  }
  if (filter.client_id) {
    where.push('client_id = ?');
    params.push(filter.client_id);
  }
  if (filter.organization_id) {
    where.push('organization_id = ?');
    params.push(filter.organization_id);
  }
  const pending = opts?.withPending
    ? ', EXISTS (SELECT 1 FROM sd_pending p WHERE p.organization_id = sd_mappings.organization_id) AS has_pending'
    : '';
  const rows = await sql<MappingRow>(
    em,
    `SELECT ${MAPPING_COLUMNS}${pending} FROM sd_mappings${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY organization_id, client_id`,
    params,
  );
  if (filter.organization_id && rows.length === 0)
    throw new DomainError('not_found', `organization ${filter.organization_id} is not mapped for you`);
  return rows;
}

/** The part of a request a scope decision needs. */
export interface Scoped {
  organization_ids: string[];
  project_key: string;
  labels: string[];
}

export const covers = (m: MappingRow, r: Scoped): boolean =>
  r.organization_ids.includes(m.organization_id) &&
  m.project_keys.includes(r.project_key) &&
  (m.labels.length === 0 || m.labels.some((l) => r.labels.includes(l)));

/**
 * SQL condition over a request row (`alias.organization_ids`, `.project_key`, `.labels`) that holds for the requests
 * some of the mappings cover. Identical conditions are merged (two clients mapping the same organization alike).
 */
export function visibleWhere(mappings: readonly MappingRow[], alias = 'v'): { sql: string; params: unknown[] } {
  const seen = new Map<string, { sql: string; params: unknown[] }>();
  for (const m of mappings) {
    const key = JSON.stringify([m.organization_id, [...m.project_keys].sort(), [...m.labels].sort()]);
    if (seen.has(key)) continue;
    const parts = [`${alias}.organization_ids @> ?::text[]`, `${alias}.project_key = ANY(?::text[])`];
    const params: unknown[] = [pgTextArray([m.organization_id]), pgTextArray(m.project_keys)];
    if (m.labels.length > 0) {
      parts.push(`${alias}.labels && ?::text[]`);
      params.push(pgTextArray(m.labels));
    }
    seen.set(key, { sql: `(${parts.join(' AND ')})`, params });
  }
  if (seen.size === 0) return { sql: 'false', params: [] };
  const all = [...seen.values()];
  return { sql: `(${all.map((c) => c.sql).join(' OR ')})`, params: all.flatMap((c) => c.params) };
}

/**
 * Ownership of one request: it must be covered by a mapping of a client the caller holds `permission` on. Out of the
 * caller's reach altogether it is 404 (as if it did not exist); covered only by clients the caller reaches without
 * the permission, 403.
 */
export async function requireOwnership(
  em: EntityManager,
  ctx: CallerContext,
  request: Scoped & { issue_key: string },
  permission: string,
): Promise<MappingRow> {
  const mappings = await sql<MappingRow>(
    em,
    `SELECT ${MAPPING_COLUMNS} FROM sd_mappings WHERE organization_id IN (?) ORDER BY created_at`,
    [request.organization_ids.length > 0 ? request.organization_ids : ['']],
  );
  const covering = mappings.filter((m) => covers(m, request));
  const allowed = covering.find((m) => hasPermission(ctx, permission, m.client_id));
  if (allowed) return allowed;
  if (covering.some((m) => inReach(ctx, m.client_id)))
    throw new DomainError('forbidden', `missing permission ${permission} on this request's client`);
  throw new DomainError('not_found', `request ${request.issue_key} not found`);
}
