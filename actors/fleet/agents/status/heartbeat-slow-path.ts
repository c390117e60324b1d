import type { Heartbeat } from '../../../../contracts/domains/agent-telemetry.ts';
import { publishEvent } from '../../../../platform/jetstream.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { AgentRef } from '../../telemetry/consume.ts';
import type { StatusDeps } from './deps.ts';
import { FACTS } from './heartbeat-rows.ts';
import { onlineMsgId, statusEvent, type StatusRow } from './status-events.ts';

/**
 * The slow path: one heartbeat in a transaction of its own that waits for its host's row lock (a heartbeat the
 * batches skipped because another transaction held its host or agent, or whose batch failed).
 */
export function heartbeatSlowPath(
  deps: Pick<StatusDeps, 'nc' | 'orm' | 'integrations'>,
): (agent: AgentRef, hb: Heartbeat, at: Date) => Promise<void> {
  return async (agent, hb, at) => {
    const f = hb.facts;
    const facts = f ? `, ${FACTS.map((k) => `${k} = ?`).join(', ')}` : '';
    const factParams = f ? FACTS.map((k) => f[k]) : [];
    const em = deps.orm.em.fork();
    await em.transactional(async (tx) => {
      // A heartbeat queued before a revocation must not bring the host back online: the agent must still be active.
      const [row] = await sql<StatusRow>(
        tx,
        `SELECT h.id, h.agent_id, h.environment_id, h.client_id, h.hostname, h.agent_status, h.last_seen_at FROM hosts h
           JOIN agents a ON a.id = h.agent_id AND a.status = 'active' WHERE h.id = ? AND h.agent_id = ? FOR UPDATE OF h FOR SHARE OF a`,
        [agent.host_id, agent.agent_id],
      );
      if (!row) return; // deleted or revoked meanwhile
      // The row lock may have been waited for (a revocation or a snapshot held it): the agent's status above was read
      // before that wait. A new statement reads what committed meanwhile, so a revoked agent's heartbeat is dropped.
      const [agentNow] = await sql<{ status: string }>(tx, `SELECT status FROM agents WHERE id = ?`, [agent.agent_id]);
      if (agentNow?.status !== 'active') return;
      if (row.agent_status !== 'online') {
        await publishEvent(deps.nc, 'svc.evt.fleet.agent_status', statusEvent(row, agent.agent_id, 'online', at), {
          msgId: onlineMsgId(row, agent.agent_id),
        });
      }
      await sql(
        tx,
        `UPDATE hosts SET agent_status = 'online', last_seen_at = greatest(last_seen_at, ?), agent_version = ?${facts}, updated_at = ? WHERE id = ?`,
        [at, hb.agent_version, ...factParams, at, row.id],
      );
      if (hb.integrations && hb.integrations.length > 0 && deps.integrations) {
        await deps.integrations(tx, [{ host: { id: row.id, client_id: row.client_id }, reports: hb.integrations, at }]);
      }
    });
  };
}
