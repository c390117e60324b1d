import { publishEvent } from '../../../../platform/jetstream.ts';
import { MicroBatcher } from '../../../../platform/micro-batch.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import { pgJson } from '../../inventory/pg-values.ts';
import type { StatusDeps } from './deps.ts';
import {
  HEARTBEAT_COLUMNS,
  KEEP_FACTS,
  heartbeatRow,
  latestPerHost,
  storeIntegrations,
  type HeartbeatItem,
} from './heartbeat-rows.ts';
import { onlineMsgId, publishAll, statusEvent, type StatusRow } from './status-events.ts';

/**
 * The transitions: heartbeats of hosts not yet online (first contact, or back after an outage: the whole fleet at
 * once after a broker outage), in batches of their own, one transaction per batch. The durable `agent_status` events
 * are published inside it, before the commit, so a failed publish rolls the change back and the heartbeats are
 * redelivered. Each heartbeat resolves true once its batch stored it, false otherwise (its host or agent locked
 * elsewhere, or the agent no longer active): it then takes the slow path.
 */
export function onlineTransitions(
  deps: Pick<StatusDeps, 'nc' | 'orm' | 'integrations'>,
): MicroBatcher<HeartbeatItem, boolean> {
  return new MicroBatcher<HeartbeatItem, boolean>({
    maxItems: 250,
    maxDelayMs: 20,
    write: async (items) => {
      const latest = latestPerHost(items);
      const done = await deps.orm.em.fork().transactional(async (tx) => {
        // Rows locked elsewhere are skipped, not waited for, and take the slow path: a host's (a snapshot being
        // stored) or its agent's (a revocation not yet committed). The agent row is share-locked, so a revocation
        // waits for this commit, and the agent's status is read by this statement.
        const rows = await sql<StatusRow>(
          tx,
          `SELECT h.id, h.agent_id, h.environment_id, h.client_id, h.hostname, h.agent_status, h.last_seen_at FROM hosts h
             JOIN agents a ON a.id = h.agent_id AND a.status = 'active'
             JOIN jsonb_to_recordset(?::jsonb) AS v(host_id uuid, agent_id uuid) ON h.id = v.host_id AND h.agent_id = v.agent_id
           FOR NO KEY UPDATE OF h SKIP LOCKED FOR SHARE OF a SKIP LOCKED`,
          [pgJson([...latest.values()].map((i) => ({ host_id: i.agent.host_id, agent_id: i.agent.agent_id })))],
        );
        if (rows.length === 0) return new Set<string>();
        await publishAll(
          rows
            .filter((row) => row.agent_status !== 'online')
            .map((row) => {
              const i = latest.get(row.id)!;
              return publishEvent(
                deps.nc,
                'svc.evt.fleet.agent_status',
                statusEvent(row, i.agent.agent_id, 'online', i.at),
                { msgId: onlineMsgId(row, i.agent.agent_id) },
              );
            }),
        );
        const mine = rows.map((row) => latest.get(row.id)!);
        await sql(
          tx,
          `UPDATE hosts h SET agent_status = 'online', last_seen_at = greatest(h.last_seen_at, v.at), agent_version = v.agent_version,
                  ${KEEP_FACTS}, updated_at = v.at
             FROM jsonb_to_recordset(?::jsonb) AS v(${HEARTBEAT_COLUMNS})
            WHERE h.id = v.host_id`,
          [pgJson(mine.map(heartbeatRow))],
        );
        const locked = new Set(rows.map((r) => r.id));
        await storeIntegrations(deps, tx, items, locked);
        return locked;
      });
      return items.map((i) => done.has(i.agent.host_id));
    },
  });
}
