import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../contracts/context.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { covers, mappingsFor, requireOrganizationFilter, requireOwnership, type MappingRow } from '../scope.ts';

/** A stored request or a pending create, located by its key or by the engineering key linked to it. */
interface Located {
  issue_key: string;
  project_key: string;
  organization_ids: string[];
  labels: string[];
  stored: boolean;
}

/**
 * Finds a request by key: a stored support request, the support request an engineering key is linked to, or a request
 * created through this service that the store has not caught up with.
 */
export async function locate(em: EntityManager, key: string): Promise<Located[]> {
  return sql<Located>(
    em,
    `SELECT issue_key, project_key, organization_ids, labels, true AS stored FROM sd_requests WHERE issue_key = ?
     UNION ALL
     (SELECT issue_key, project_key, organization_ids, labels, true AS stored FROM sd_requests WHERE linked_issue_key = ? ORDER BY updated_at DESC LIMIT 20)
     UNION ALL
     (SELECT issue_key, fields->>'project_key', ARRAY[organization_id], ARRAY(SELECT jsonb_array_elements_text(COALESCE(fields->'labels', '[]'::jsonb))), false
      FROM sd_pending WHERE kind = 'create' AND issue_key = ? LIMIT 1)`,
    [key, key, key],
  );
}

/**
 * The request a key names that the caller owns with `permission` (an engineering issue may be linked to several
 * support requests, of different organizations): undefined when the store knows none; 403 when the caller only
 * reaches them without the permission; 404 when it reaches none.
 */
export async function locateOwned(
  em: EntityManager,
  ctx: CallerContext,
  key: string,
  permission: string,
): Promise<{ found: Located; mapping: MappingRow } | undefined> {
  const candidates = await locate(em, key);
  if (candidates.length === 0) return undefined;
  let forbidden: DomainError | undefined;
  for (const found of candidates) {
    try {
      return { found, mapping: await requireOwnership(em, ctx, found, permission) };
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      if (err.code === 'forbidden') forbidden ??= err;
      else if (err.code !== 'not_found') throw err;
    }
  }
  throw forbidden ?? new DomainError('not_found', `request ${key} not found`);
}

/**
 * The request a read of one request (detail, action log) is about: the caller needs servicedesk:read on it, a super
 * admin must name its organization (as on every read route), and a named organization narrows the look-up to it: 404
 * for an organization outside the caller's mappings or a request that is not in it.
 */
export async function locateForRead(
  em: EntityManager,
  ctx: CallerContext,
  key: string,
  organizationId: string | undefined,
): Promise<Located> {
  requireOrganizationFilter(ctx, { organization_id: organizationId });
  if (!organizationId) {
    const owned = await locateOwned(em, ctx, key, 'servicedesk:read');
    if (!owned) throw new DomainError('not_found', `request ${key} not found`);
    return owned.found;
  }
  const mappings = await mappingsFor(em, ctx, 'servicedesk:read', { organization_id: organizationId });
  const candidates = await locate(em, key);
  const found = candidates.find((c) => mappings.some((m) => covers(m, c)));
  if (found) return found;
  // Reached only without the permission: 403, as without the filter; otherwise not in that organization for the caller.
  if (candidates.length > 0) await locateOwned(em, ctx, key, 'servicedesk:read');
  throw new DomainError('not_found', `request ${key} not found in organization ${organizationId}`);
}
