import type { MikroORM } from '@mikro-orm/postgresql';
import { AgentEventBatch, Heartbeat } from '../../../contracts/domains/agent-telemetry.ts';
import { streams } from '../../../contracts/streams.ts';
import { consumerWatermark, publishEvent, type ConsumerHandle } from '../../../platform/jetstream.ts';
import { Lease } from '../../../platform/lease.ts';
import type { MicroBatcher } from '../../../platform/micro-batch.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { runTelemetryConsumer, type AgentRef } from '../telemetry/consume.ts';
import type { StatusDeps } from './status/deps.ts';
import { heartbeatFastPath } from './status/heartbeat-fast-path.ts';
import type { HeartbeatItem } from './status/heartbeat-rows.ts';
import { heartbeatSlowPath } from './status/heartbeat-slow-path.ts';
import { onlineTransitions } from './status/online-transitions.ts';
import { statusEvent, type StatusRow } from './status/status-events.ts';

export type { IntegrationSink, StatusDeps } from './status/deps.ts';
export { latestPerHost, type HeartbeatItem } from './status/heartbeat-rows.ts';

export const HEARTBEAT_DURABLE = 'fleet-telemetry-heartbeat';
export const EVENTS_DURABLE = 'fleet-telemetry-events';

/**
 * Heartbeats: `last_seen_at` (the server's clock, not the agent's), agent version, facts when sent, integration
 * statuses; the host goes online. At fleet scale (a thousand agents every 10 s) one statement per heartbeat would be
 * most of the ingest's database work, so each heartbeat tries, in order:
 * - the fast path (heartbeat-fast-path.ts): hosts already online, written in batches, one transaction per batch (a
 *   heartbeat is never seen half-applied, and the host rows stay locked while their integrations are written, the
 *   order snapshots take them in), each message acknowledged once its batch is stored;
 * - the transitions (online-transitions.ts): a host not yet online (first contact, or back after an outage), in a
 *   batch of its own whose `agent_status` events are published before the commit; one heartbeat at a time, a fleet
 *   coming back at once held every heartbeat queued behind it;
 * - the slow path (heartbeat-slow-path.ts): a heartbeat whose host is locked by another transaction, in a transaction
 *   of its own that waits for that host alone.
 * Going offline is the stale sweeper's (startStaleSweeper).
 */
export function startHeartbeatIngest(deps: StatusDeps): Promise<ConsumerHandle> {
  const fastPath = heartbeatFastPath(deps);
  const transitions = onlineTransitions(deps);
  const slowPath = heartbeatSlowPath(deps);

  /**
   * Whether a batch stored the heartbeat. A failed batch sends each of its heartbeats down the slow path, one by one:
   * one bad heartbeat fails alone instead of taking up to 250 others with it into redelivery and the dead letters.
   */
  let lastBatchError: unknown;
  const inBatch = async (b: MicroBatcher<HeartbeatItem, boolean>, item: HeartbeatItem): Promise<boolean> => {
    try {
      return await b.add(item);
    } catch (err) {
      // Every heartbeat of the batch is rejected with the same error: said once.
      if (err !== lastBatchError)
        deps.log.warn({ err }, 'a heartbeat batch failed; its heartbeats are stored one by one');
      lastBatchError = err;
      return false;
    }
  };

  return runTelemetryConsumer({
    nc: deps.nc,
    directory: deps.directory,
    kind: 'heartbeat',
    durable: HEARTBEAT_DURABLE,
    schema: Heartbeat,
    // Enough messages in hand to fill a batch.
    concurrency: 500,
    log: deps.log,
    handler: async (agent, hb) => {
      const at = new Date(deps.clock.now());
      const item = { agent, hb, at };
      if ((await inBatch(fastPath, item)) || (await inBatch(transitions, item))) return;
      await slowPath(agent, hb, at);
    },
  });
}

/** File changes under watched paths, republished as durable fleet events with the host and tenant resolved. */
export function startAgentEventIngest(
  deps: Pick<StatusDeps, 'nc' | 'directory' | 'log'> & { orm: MikroORM },
): Promise<ConsumerHandle> {
  const hostnames = new Map<string, string>();
  const hostnameOf = async (agent: AgentRef): Promise<string> => {
    const known = hostnames.get(agent.host_id);
    if (known !== undefined) return known;
    const [row] = await sql<{ hostname: string }>(deps.orm.em.fork(), `SELECT hostname FROM hosts WHERE id = ?`, [
      agent.host_id,
    ]);
    const name = row?.hostname ?? '';
    if (hostnames.size > 50_000) hostnames.clear();
    hostnames.set(agent.host_id, name);
    return name;
  };
  return runTelemetryConsumer({
    nc: deps.nc,
    directory: deps.directory,
    kind: 'events',
    durable: EVENTS_DURABLE,
    schema: AgentEventBatch,
    concurrency: 8,
    log: deps.log,
    handler: async (agent, batch, meta) => {
      const hostname = await hostnameOf(agent);
      // Sequential with stable ids: a redelivered batch republishes the same ids, which the stream stores once.
      for (const [i, e] of batch.events.entries()) {
        await publishEvent(
          deps.nc,
          'svc.evt.fleet.file_change',
          {
            ...e,
            host_id: agent.host_id,
            agent_id: agent.agent_id,
            environment_id: agent.environment_id,
            client_id: agent.client_id,
            hostname,
          },
          { msgId: `file-change:${agent.agent_id}:${meta.streamSequence}:${i}` },
        );
      }
    },
  });
}

/**
 * Marks hosts offline after `staleTimeoutSeconds` without a heartbeat. Exactly one instance sweeps at a time (a lease in
 * JetStream KV); each host changes in its own transaction with its event published before the commit, re-checked under
 * the row lock so a heartbeat that arrived meanwhile wins.
 */
export function startStaleSweeper(deps: StatusDeps): { stop(): Promise<void>; sweep(): Promise<number> } {
  const timeoutMs = deps.staleTimeoutSeconds * 1000;
  const everyMs = Math.min(30_000, Math.max(500, Math.floor(timeoutMs / 4)));
  const lease = new Lease(deps.nc, 'fleet-agent-status-sweeper', Math.max(3 * everyMs, 3_000), deps.log);
  const log = deps.log.child({ worker: 'agent-status-sweeper' });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;

  const sweep = async (): Promise<number> => {
    // A heartbeat stored but not yet ingested (the durable's leader moving, a backlog) is not a silent agent: the
    // cutoff moves back by how far the heartbeat durable is behind, and no sweep runs while it cannot say.
    const upTo = await consumerWatermark(deps.nc, streams.SVC_TELEMETRY.name, HEARTBEAT_DURABLE);
    if (upTo === undefined) {
      log.info('heartbeat ingest cannot say how far it is; sweep skipped');
      return 0;
    }
    const cutoff = new Date(deps.clock.now() - Math.max(0, Date.now() - upTo) - timeoutMs);
    // A scan of the online hosts, not an index: an index on last_seen_at would make every heartbeat's update write
    // into all of the table's indexes (Migration0015).
    const stale = await sql<{ id: string }>(
      deps.orm.em.fork(),
      `SELECT id FROM hosts WHERE agent_status = 'online' AND last_seen_at < ? ORDER BY last_seen_at LIMIT 1000`,
      [cutoff],
    );
    let changed = 0;
    for (const { id } of stale) {
      if (stopped) break;
      await deps.orm.em.fork().transactional(async (tx) => {
        const [row] = await sql<StatusRow & { last_seen_at: Date }>(
          tx,
          `SELECT id, agent_id, environment_id, client_id, hostname, agent_status, last_seen_at FROM hosts WHERE id = ? AND agent_status = 'online' AND last_seen_at < ? FOR UPDATE`,
          [id, cutoff],
        );
        if (!row) return;
        const at = new Date(deps.clock.now());
        if (row.agent_id) {
          await publishEvent(deps.nc, 'svc.evt.fleet.agent_status', statusEvent(row, row.agent_id, 'offline', at), {
            msgId: `agent-status:${row.id}:offline:${new Date(row.last_seen_at).getTime()}`,
          });
        }
        await sql(tx, `UPDATE hosts SET agent_status = 'offline', updated_at = ? WHERE id = ?`, [at, row.id]);
        changed++;
      });
    }
    if (changed > 0) log.info({ changed }, 'hosts marked offline');
    return changed;
  };

  const tick = (): void => {
    running = (async () => {
      if (await lease.hold()) await sweep();
    })()
      .catch((err: unknown) => log.warn({ err }, 'stale-agent sweep failed; next tick retries'))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, everyMs);
      });
  };
  timer = setTimeout(tick, everyMs);

  return {
    sweep,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await lease.release();
    },
  };
}
