import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { clientsWith, hasPermission, requirePermission } from '../../contracts/access.ts';
import type { CallerContext } from '../../contracts/context.ts';
import { MAPPING_IMMUTABLE, type Mapping } from '../../contracts/domains/servicedesk.ts';
import { DomainError } from '../../contracts/errors.ts';
import { refuseChanges } from '../../contracts/immutable.ts';
import { requireOnClient } from '../../platform/scope.ts';
import { conflictOnDuplicate, findById, iso, pageOf, sql } from '../../platform/stores/sql.ts';
import { trackerOf, type SdDeps, type SdHandlers } from './deps.ts';
import { MAPPING_COLUMNS, pgTextArray, requireOrganizationFilter, type MappingRow } from './scope.ts';
import type { CallOpts } from './tracker/api.ts';

export const mappingOut = (m: MappingRow): Mapping => ({
  id: m.id,
  client_id: m.client_id,
  organization_id: m.organization_id,
  organization_name: m.organization_name,
  service_desk_ids: m.service_desk_ids,
  project_keys: m.project_keys,
  labels: m.labels,
  created_at: iso(m.created_at),
  updated_at: iso(m.updated_at),
});

interface MappingInput {
  organization_id: string;
  service_desk_ids: string[];
  project_keys: string[];
  labels: string[];
}

/**
 * Checks a mapping against the tracker before it is stored: the organization and every service desk must exist
 * there. The organization's name is taken from the tracker, and without project keys the mapping covers the
 * projects of its service desks.
 */
async function checked(
  deps: SdDeps,
  input: MappingInput,
  opts: CallOpts,
): Promise<MappingInput & { organization_name: string }> {
  const api = trackerOf(deps);
  const asInput = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof DomainError && err.code === 'not_found')
        throw new DomainError('bad_request', `${what} does not exist in the issue tracker`);
      throw err;
    }
  };
  const serviceDeskIds = [...new Set(input.service_desk_ids)];
  const [org, desks] = await Promise.all([
    asInput(`organization ${input.organization_id}`, () => api.organization(input.organization_id, opts)),
    Promise.all(serviceDeskIds.map((id) => asInput(`service desk ${id}`, () => api.serviceDesk(id, opts)))),
  ]);
  const projectKeys =
    input.project_keys.length > 0 ? [...new Set(input.project_keys)] : [...new Set(desks.map((d) => d.projectKey))];
  return {
    organization_id: input.organization_id,
    organization_name: org.name,
    service_desk_ids: serviceDeskIds,
    project_keys: projectKeys,
    labels: [...new Set(input.labels)],
  };
}

/**
 * Who may map an organization: a mapping shows the organization's requests to its client, so a caller who is not a
 * super admin may map one only when every client already mapping it is one the caller administers
 * (servicedeskconfig:write); otherwise an admin of one client could map another client's organization and read its
 * requests. An organization nobody maps yet is free. `locked`: inside the write's transaction, under a lock per
 * organization, so two admins mapping the same new organization at once cannot both pass.
 */
async function requireOrganizationFree(
  em: EntityManager,
  ctx: CallerContext,
  organizationId: string,
  locked = false,
): Promise<void> {
  if (locked) await sql(em, `SELECT pg_advisory_xact_lock(hashtext(?))`, [`sd_mappings:${organizationId}`]);
  if (ctx.access?.super_admin) return;
  const owners = await sql<{ client_id: string }>(
    em,
    `SELECT DISTINCT client_id FROM sd_mappings WHERE organization_id = ?`,
    [organizationId],
  );
  if (owners.some((o) => !hasPermission(ctx, 'servicedeskconfig:write', o.client_id))) {
    throw new DomainError(
      'forbidden',
      `organization ${organizationId} is already mapped to a client outside your reach (servicedeskconfig:write); only a super admin can map it to another client`,
    );
  }
}

async function loadMapping(em: EntityManager, ctx: CallerContext, id: string, permission: string): Promise<MappingRow> {
  const row = await findById<MappingRow>(em, 'sd_mappings', MAPPING_COLUMNS, id, 'organization mapping');
  requireOnClient(ctx, row.client_id, permission, 'organization mapping');
  return row;
}

/** Lists mappings of the clients the caller holds `permission` on, optionally one client's and one organization's. */
async function listMappings(
  em: EntityManager,
  ctx: CallerContext,
  permission: string,
  q: { page: number; per_page: number; client_id?: string | undefined; organization_id?: string | undefined },
) {
  requirePermission(ctx, permission);
  if (q.client_id) requireOnClient(ctx, q.client_id, permission, 'client');
  const scope = clientsWith(ctx, permission);
  if (scope !== 'all' && scope.length === 0) return { items: [], total: 0, page: q.page, per_page: q.per_page };
  const where: string[] = [];
  const params: unknown[] = [];
  if (scope !== 'all') {
    where.push('client_id IN (?)');
    params.push(scope);
  }
  if (q.client_id) {
    where.push('client_id = ?');
    params.push(q.client_id);
  }
  if (q.organization_id) {
    where.push('organization_id = ?');
    params.push(q.organization_id);
  }
  return pageOf(
    em,
    {
      columns: MAPPING_COLUMNS,
      from: `sd_mappings${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`,
      params,
      order: 'organization_name, organization_id, client_id, id',
    },
    q,
    (rows: MappingRow[]) => rows.map(mappingOut),
  );
}

export function mappingHandlers(deps: SdDeps): SdHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();
  return {
    'svc.servicedesk.mappings.list': async (q, { ctx }) => listMappings(fork(), ctx, 'servicedeskconfig:read', q),

    // A read route: a super admin names the organization, and one outside the caller's mappings is 404 (as on tickets).
    'svc.servicedesk.organizations.list': async (q, { ctx }) => {
      requireOrganizationFilter(ctx, q);
      const page = await listMappings(fork(), ctx, 'servicedesk:read', q);
      if (q.organization_id && page.total === 0)
        throw new DomainError('not_found', `organization ${q.organization_id} is not mapped for you`);
      return page;
    },

    'svc.servicedesk.mappings.create': async (body, { ctx, deadline, signal }) => {
      requireOnClient(ctx, body.client_id, 'servicedeskconfig:write', 'client');
      // Checked first without the lock too, so a refusal costs no call to the tracker.
      await requireOrganizationFree(fork(), ctx, body.organization_id);
      const m = await checked(deps, body, { deadline, signal });
      const id = randomUUID();
      const em = fork();
      await conflictOnDuplicate(`this client already maps organization ${m.organization_id}`, () =>
        em.transactional(async (tx) => {
          await requireOrganizationFree(tx, ctx, m.organization_id, true);
          await sql(
            tx,
            `INSERT INTO sd_mappings (id, client_id, organization_id, organization_name, service_desk_ids, project_keys, labels) VALUES (?, ?, ?, ?, ?::text[], ?::text[], ?::text[])`,
            [
              id,
              body.client_id,
              m.organization_id,
              m.organization_name,
              pgTextArray(m.service_desk_ids),
              pgTextArray(m.project_keys),
              pgTextArray(m.labels),
            ],
          );
        }),
      );
      const row = await findById<MappingRow>(em, 'sd_mappings', MAPPING_COLUMNS, id, 'organization mapping');
      await deps.audit.record(ctx, {
        action: 'servicedesk.mapping_created',
        resource_type: 'servicedesk_mapping',
        resource_id: id,
        client_ids: [row.client_id],
        details: { ...mappingOut(row) },
      });
      // A newly mapped organization is loaded in the background; reads show it as the load goes.
      deps.sync?.kick();
      return mappingOut(row);
    },

    'svc.servicedesk.mappings.update': async ({ id, client_id, ...body }, { ctx, deadline, signal }) => {
      const before = await loadMapping(fork(), ctx, id, 'servicedeskconfig:write');
      refuseChanges({ client_id }, before, MAPPING_IMMUTABLE);
      await requireOrganizationFree(fork(), ctx, body.organization_id);
      const m = await checked(deps, body, { deadline, signal });
      const em = fork();
      const [row] = await conflictOnDuplicate(`this client already maps organization ${m.organization_id}`, () =>
        em.transactional(async (tx) => {
          await requireOrganizationFree(tx, ctx, m.organization_id, true);
          return sql<MappingRow>(
            tx,
            `UPDATE sd_mappings SET organization_id = ?, organization_name = ?, service_desk_ids = ?::text[], project_keys = ?::text[], labels = ?::text[], updated_at = now()
             WHERE id = ? RETURNING ${MAPPING_COLUMNS}`,
            [
              m.organization_id,
              m.organization_name,
              pgTextArray(m.service_desk_ids),
              pgTextArray(m.project_keys),
              pgTextArray(m.labels),
              id,
            ],
          );
        }),
      );
      if (!row) throw new DomainError('not_found', 'organization mapping not found');
      await deps.audit.record(ctx, {
        action: 'servicedesk.mapping_updated',
        resource_type: 'servicedesk_mapping',
        resource_id: id,
        client_ids: [before.client_id, row.client_id],
        details: { before: mappingOut(before), after: mappingOut(row) },
      });
      if (before.organization_id !== row.organization_id) deps.sync?.kick();
      return mappingOut(row);
    },

    'svc.servicedesk.mappings.delete': async ({ id }, { ctx }) => {
      const em = fork();
      const row = await loadMapping(em, ctx, id, 'servicedeskconfig:delete');
      await sql(em, `DELETE FROM sd_mappings WHERE id = ?`, [id]);
      await deps.audit.record(ctx, {
        action: 'servicedesk.mapping_deleted',
        resource_type: 'servicedesk_mapping',
        resource_id: id,
        client_ids: [row.client_id],
        details: { ...mappingOut(row) },
      });
      return {};
    },
  };
}
