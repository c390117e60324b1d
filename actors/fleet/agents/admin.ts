import type { EntityManager } from '@mikro-orm/postgresql';
import { clientsWith, requirePermission } from '../../../contracts/access.ts';
import type { Agent } from '../../../contracts/domains/fleet.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { iso, isoOrNull, pageOf, sql } from '../../../platform/stores/sql.ts';
import type { FleetDeps, FleetHandlers } from '../deps.ts';
import { loadClient, loadEnvironment, requireOnClient } from '../scope.ts';
import { revokeAgents } from './revocation.ts';

interface AgentRow {
  id: string;
  client_id: string;
  environment_id: string;
  host_id: string | null;
  hostname: string;
  os: string;
  arch: string;
  agent_version: string;
  status: 'pending' | 'active' | 'revoked';
  public_key: string;
  enrolled_at: string | null;
  revoked_at: string | null;
  credentials_expires_at: string | null;
  created_at: string;
}

const COLUMNS =
  'id, client_id, environment_id, host_id, hostname, os, arch, agent_version, status, public_key, enrolled_at, revoked_at, credentials_expires_at, created_at';

const out = (a: AgentRow): Agent => ({
  id: a.id,
  client_id: a.client_id,
  environment_id: a.environment_id,
  host_id: a.host_id,
  hostname: a.hostname,
  os: a.os,
  arch: a.arch,
  agent_version: a.agent_version,
  // Pending rows are filtered out by every query here.
  status: a.status === 'revoked' ? 'revoked' : 'active',
  public_key: a.public_key,
  enrolled_at: isoOrNull(a.enrolled_at),
  revoked_at: isoOrNull(a.revoked_at),
  credentials_expires_at: isoOrNull(a.credentials_expires_at),
  created_at: iso(a.created_at),
});

/** Enrolled agents: listed per the caller's agents:read scope, revoked (broker credentials included). */
export function agentAdminHandlers(deps: FleetDeps): FleetHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.fleet.agents.list': async ({ client_id, environment_id, status, page, per_page }, { ctx }) => {
      requirePermission(ctx, 'agents:read');
      const em = fork();
      // A filter naming a client or environment out of reach answers 404, as reading it would.
      if (client_id) {
        await loadClient(em, ctx, client_id, 'agents:read');
      }
      if (environment_id) await loadEnvironment(em, ctx, environment_id, 'agents:read');
      const scope = clientsWith(ctx, 'agents:read');
      if (scope !== 'all' && scope.length === 0) return { items: [], total: 0, page, per_page };
      const where: string[] = [status ? 'status = ?' : `status IN ('active', 'revoked')`];
      const params: unknown[] = status ? [status] : [];
      if (scope !== 'all') {
        where.push('client_id IN (?)');
        params.push(scope);
      }
      if (client_id) {
        where.push('client_id = ?');
        params.push(client_id);
      }
      if (environment_id) {
        where.push('environment_id = ?');
        params.push(environment_id);
      }
      return pageOf(
        em,
        { columns: COLUMNS, from: `agents WHERE ${where.join(' AND ')}`, params, order: 'created_at DESC, id DESC' },
        { page, per_page },
        (rows: AgentRow[]) => rows.map(out),
      );
    },

    'svc.fleet.agents.revoke': async ({ id }, { ctx }) => {
      const revoked = await fork().transactional(async (tx) => {
        const [agent] = await sql<AgentRow>(tx, `SELECT ${COLUMNS} FROM agents WHERE id = ? AND status <> 'pending'`, [
          id,
        ]);
        if (!agent) throw new DomainError('not_found', 'agent not found');
        requireOnClient(ctx, agent.client_id, 'agents:update', 'agent');
        // Already revoked: nothing to do (a repeated DELETE answers 204 again).
        return revokeAgents(tx, deps.revoker, { sql: 'id = ?', params: [id] });
      });
      const [agent] = revoked;
      if (agent) {
        await deps.audit.record(ctx, {
          action: 'agent.revoked',
          resource_type: 'agent',
          resource_id: id,
          client_ids: [agent.client_id],
          details: { client_id: agent.client_id, host_id: agent.host_id, public_key: agent.public_key },
        });
      }
      return {};
    },
  };
}
