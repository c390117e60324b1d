import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../contracts/context.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { randomUUID } from 'node:crypto';
import { sql } from '../../../platform/stores/sql.ts';
import { siteOf, trackerOf, type SdDeps } from '../deps.ts';
import { locateOwned } from '../reads/locate.ts';
import { requireOwnership, type MappingRow, type Scoped } from '../scope.ts';
import { organizationIdsOf, type CallOpts, type Issue } from '../tracker/api.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

/** The permissions a proxy route resolves its request with: reading it, or acting on it. */
export const READ = 'servicedesk:read';
export const WRITE = 'servicedesk:write';

/** The support request a proxy call acts on, after the ownership check. */
export interface Target {
  /** The support request's key (an engineering key is resolved to it). */
  issue_key: string;
  /** The key the caller named. */
  asked: string;
  mapping: MappingRow;
  service_desk_id: string | null;
}

const scopedOf = (issue: Issue, organizationsField: string): Scoped & { issue_key: string } => ({
  issue_key: issue.key,
  project_key: issue.fields.project?.key ?? issue.key.split('-')[0] ?? '',
  organization_ids: organizationIdsOf(issue.fields, organizationsField),
  labels: issue.fields.labels ?? [],
});

/**
 * Resolves the key a caller named to the support request and checks the caller owns it, before anything is forwarded:
 * the read store first (a support key, an engineering key through the link the sync recorded, a pending create); a
 * key the store does not know yet is looked up in the tracker (an engineering issue through its issue links to a
 * support project). Out of reach: 404; in reach without `permission`: 403.
 */
export async function resolveTarget(
  deps: SdDeps,
  ctx: CallerContext,
  key: string,
  permission: string,
  opts: CallOpts,
): Promise<Target> {
  const em: EntityManager = deps.orm.em.fork();
  const owned = await locateOwned(em, ctx, key, permission);
  if (owned)
    return {
      issue_key: owned.found.issue_key,
      asked: key,
      mapping: owned.mapping,
      service_desk_id: await serviceDeskOf(em, owned.found.issue_key),
    };
  // Not in the store yet: the tracker says which project and organization the issue (or its support request) has.
  const api = trackerOf(deps);
  const supportProjects = new Set(
    (await sql<{ k: string }>(em, `SELECT DISTINCT unnest(project_keys) AS k FROM sd_mappings`)).map((r) => r.k),
  );
  const { organizations } = await siteOf(deps).get(opts);
  const scopeFields = ['project', organizations, 'labels', 'issuelinks'];
  let issue: Issue;
  try {
    issue = await api.issue(key, scopeFields, opts);
  } catch (err) {
    if (err instanceof DomainError && err.code === 'not_found')
      throw new DomainError('not_found', `request ${key} not found`);
    throw err;
  }
  if (!supportProjects.has(issue.fields.project?.key ?? '')) {
    // An engineering issue: the support request is the linked issue in a support project.
    const linked = (issue.fields.issuelinks ?? [])
      .map((l) => l.outwardIssue?.key ?? l.inwardIssue?.key)
      .find((k) => k && supportProjects.has(k.split('-')[0] ?? ''));
    if (!linked) throw new DomainError('not_found', `request ${key} not found`);
    issue = await api.issue(linked, scopeFields, opts);
  }
  const scoped = scopedOf(issue, organizations);
  const mapping = await requireOwnership(em, ctx, scoped, permission);
  return {
    issue_key: scoped.issue_key,
    asked: key,
    mapping,
    service_desk_id: await serviceDeskOf(em, scoped.issue_key),
  };
}

async function serviceDeskOf(em: EntityManager, key: string): Promise<string | null> {
  const [row] = await sql<{ service_desk_id: string | null }>(
    em,
    `SELECT service_desk_id FROM sd_requests WHERE issue_key = ?`,
    [key],
  );
  return row?.service_desk_id ?? null;
}

/**
 * Records a write made through this service: the request's action log and the audit trail. The audit entry concerns
 * the client of the mapping the caller acted through.
 */
export async function logAction(
  deps: SdDeps,
  ctx: CallerContext,
  issueKey: string,
  through: Pick<MappingRow, 'client_id'>,
  action: string,
  details: Record<string, unknown>,
): Promise<void> {
  const p = ctx.principal;
  const actor =
    p.kind === 'user'
      ? { id: p.user_id, email: p.email }
      : p.kind === 'service_account'
        ? { id: p.service_account_id, email: `service-account:${p.name}` }
        : { id: null, email: null };
  await sql(
    deps.orm.em.fork(),
    `INSERT INTO sd_actions (id, issue_key, action, actor_id, actor_email, details) VALUES (?, ?, ?, ?, ?, ?::jsonb)`,
    [randomUUID(), issueKey, action, actor.id, actor.email, pgJson(details)],
  );
  await deps.audit.record(ctx, {
    action: `servicedesk.${action}`,
    resource_type: 'servicedesk_request',
    resource_id: issueKey,
    client_ids: [through.client_id],
    details,
  });
}
