import type { EntityManager } from '@mikro-orm/postgresql';
import type { Host } from '../../contracts/domains/fleet.ts';
import { DomainError } from '../../contracts/errors.ts';
import { iso, isoOrNull, pageOf, sql } from '../../platform/stores/sql.ts';
import { revokeAgents } from './agents/revocation.ts';
import type { FleetDeps, FleetHandlers } from './deps.ts';
import { HOST_COLUMNS, loadEnvironment, loadHost, type HostRow } from './scope.ts';
import { pgJson } from '../../platform/stores/pg-values.ts';

export const hostOut = (h: HostRow): Host => ({
  id: h.id,
  environment_id: h.environment_id,
  client_id: h.client_id,
  agent_id: h.agent_id,
  hostname: h.hostname,
  ip_address: h.ip_address,
  os: h.os,
  os_version: h.os_version,
  kernel_version: h.kernel_version,
  arch: h.arch,
  cpu_cores: h.cpu_cores,
  // bigint arrives as text; host memory stays far below 2^53.
  memory_total_bytes: Number(h.memory_total_bytes),
  agent_status: h.agent_status,
  agent_version: h.agent_version,
  last_seen_at: isoOrNull(h.last_seen_at),
  tags: h.tags,
  labels: h.labels,
  created_at: iso(h.created_at),
  updated_at: iso(h.updated_at),
});

/** Sort columns of the host list; hosts never seen sort after the others in both directions. */
const SORT: Record<
  'hostname' | 'last_seen_at' | 'created_at' | 'agent_status' | 'ip_address',
  (dir: string) => string
> = {
  hostname: (dir) => `hostname ${dir}, id ${dir}`,
  last_seen_at: (dir) => `last_seen_at ${dir} NULLS LAST, hostname ASC, id ASC`,
  created_at: (dir) => `created_at ${dir}, id ${dir}`,
  agent_status: (dir) => `agent_status ${dir}, hostname ASC, id ASC`,
  ip_address: (dir) => `ip_address ${dir}, hostname ASC, id ASC`,
};

/** Which keys were added, changed or removed between two tag maps (for the audit entry). */
function tagChanges(
  before: Record<string, string>,
  after: Record<string, string>,
): Record<string, { from: string | null; to: string | null }> {
  const changes: Record<string, { from: string | null; to: string | null }> = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = Object.hasOwn(before, key) ? before[key]! : null;
    const to = Object.hasOwn(after, key) ? after[key]! : null;
    if (from !== to) changes[key] = { from, to };
  }
  return changes;
}

/** Hosts of an environment: listed, read, tagged, deleted (their agent revoked). */
export function hostHandlers(deps: FleetDeps): FleetHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.fleet.hosts.list': async ({ environment_id, page, per_page, status, sort, order }, { ctx }) => {
      const em = fork();
      await loadEnvironment(em, ctx, environment_id, 'hosts:read');
      const dir = order === 'desc' ? 'DESC' : 'ASC';
      return pageOf(
        em,
        {
          columns: HOST_COLUMNS,
          from: `hosts WHERE environment_id = ?${status ? ' AND agent_status = ?' : ''}`,
          params: status ? [environment_id, status] : [environment_id],
          order: SORT[sort](dir),
        },
        { page, per_page },
        (rows: HostRow[]) => rows.map(hostOut),
      );
    },

    'svc.fleet.hosts.get': async ({ id }, { ctx }) => hostOut(await loadHost(fork(), ctx, id, 'hosts:read')),

    'svc.fleet.hosts.tags.replace': async ({ id, tags }, { ctx }) => {
      const { before, after } = await fork().transactional(async (tx) => {
        const before = await loadHost(tx, ctx, id, 'tags:write', true);
        const [after] = await sql<HostRow>(
          tx,
          `UPDATE hosts SET tags = ?::jsonb, updated_at = now() WHERE id = ? RETURNING ${HOST_COLUMNS}`,
          [pgJson(tags), id],
        );
        if (!after) throw new DomainError('not_found', 'host not found');
        return { before, after };
      });
      const changes = tagChanges(before.tags, after.tags);
      if (Object.keys(changes).length > 0) {
        await deps.audit.record(ctx, {
          action: 'host.tags.updated',
          resource_type: 'host',
          resource_id: id,
          client_ids: [before.client_id],
          details: { client_id: before.client_id, hostname: before.hostname, changes },
        });
      }
      return hostOut(after);
    },

    'svc.fleet.hosts.delete': async ({ id }, { ctx }) => {
      const { host, agents } = await fork().transactional(async (tx) => {
        const host = await loadHost(tx, ctx, id, 'hosts:delete', true);
        // Its agent (and any earlier one of the same host) loses its broker credentials before the host goes.
        const agents = await revokeAgents(
          tx,
          deps.revoker,
          host.agent_id
            ? { sql: 'host_id = ? OR id = ?', params: [id, host.agent_id] }
            : { sql: 'host_id = ?', params: [id] },
        );
        // Inventory, integrations and watch config cascade with the host.
        await sql(tx, `DELETE FROM hosts WHERE id = ?`, [id]);
        return { host, agents };
      });
      deps.hostScopes?.forget(id);
      await deps.audit.record(ctx, {
        action: 'host.deleted',
        resource_type: 'host',
        resource_id: id,
        client_ids: [host.client_id],
        details: {
          client_id: host.client_id,
          environment_id: host.environment_id,
          hostname: host.hostname,
          revoked_agents: agents.map((a) => a.id),
        },
      });
      for (const a of agents) {
        await deps.audit.record(ctx, {
          action: 'agent.revoked',
          resource_type: 'agent',
          resource_id: a.id,
          client_ids: [a.client_id],
          details: { client_id: a.client_id, host_id: id, reason: 'host deleted' },
        });
      }
      return {};
    },
  };
}
