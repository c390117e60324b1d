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

/**
 * The fast path: heartbeats of hosts already online, stored in batches (one UPDATE for the hosts and one upsert for
 * their integrations, in one transaction). Each heartbeat resolves true once its batch stored it, false when its host
 * was not online, not its agent's, or locked: it then takes the transitions or the slow path.
 */
export function heartbeatFastPath(
  deps: Pick<StatusDeps, 'orm' | 'integrations'>,
): MicroBatcher<HeartbeatItem, boolean> {
  return new MicroBatcher<HeartbeatItem, boolean>({
    maxItems: 250,
    maxDelayMs: 50,
    write: async (items) => {
      const rows = [...latestPerHost(items).values()].map(heartbeatRow);
      // A host twice in one batch (an agent flushing its outbox): its latest heartbeat counts (latestPerHost). A host
      // whose row is locked (its inventory snapshot being stored, a transaction of a few hundred ms) is skipped, not
      // waited for: waiting held the whole batch, and every heartbeat queued behind it, for as long as the slowest
      // snapshot. A skipped heartbeat takes the slow path, which waits for that host alone.
      // One transaction: a heartbeat's facts and its integration statuses are seen together or not at all.
      const done = await deps.orm.em.fork().transactional(async (tx) => {
        const updated = await sql<{ id: string }>(
          tx,
          `WITH v AS (SELECT DISTINCT ON (host_id) * FROM jsonb_to_recordset(?::jsonb)
                      AS x(${HEARTBEAT_COLUMNS}) ORDER BY host_id, at DESC),
              free AS (SELECT h.id FROM hosts h JOIN v ON h.id = v.host_id AND h.agent_id = v.agent_id
                        WHERE h.agent_status = 'online' FOR NO KEY UPDATE OF h SKIP LOCKED)
         UPDATE hosts h SET last_seen_at = greatest(h.last_seen_at, v.at), agent_version = v.agent_version, ${KEEP_FACTS}
           FROM v
          WHERE h.id = v.host_id AND h.id IN (SELECT id FROM free)
          RETURNING h.id`,
          [pgJson(rows)],
        );
        const stored = new Set(updated.map((r) => r.id));
        await storeIntegrations(deps, tx, items, stored);
        return stored;
      });
      return items.map((i) => done.has(i.agent.host_id));
    },
  });
}
