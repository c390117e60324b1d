import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { AgentEventBatch, Heartbeat, type IntegrationReport } from '../../../contracts/domains/agent-telemetry.ts';
import type { AgentStatusChanged } from '../../../contracts/domains/fleet-agents.ts';
import type { Clock } from '../../../platform/clock.ts';
import { publishEvent, type ConsumerHandle } from '../../../platform/jetstream.ts';
import { Lease } from '../../../platform/lease.ts';
import type { Logger } from '../../../platform/logger.ts';
import { MicroBatcher } from '../../../platform/micro-batch.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { pgJson } from '../inventory/pg-values.ts';
import { runTelemetryConsumer, type AgentDirectory, type AgentRef } from '../telemetry/consume.ts';

export const HEARTBEAT_DURABLE = 'fleet-telemetry-heartbeat';
export const EVENTS_DURABLE = 'fleet-telemetry-events';

/** Stores a host's integration reports (the inventory part owns the table); heartbeats never remove any. */
export type IntegrationSink = (
  em: EntityManager,
  entries: { host: { id: string; client_id: string }; reports: IntegrationReport[]; at: Date }[],
) => Promise<void>;

export interface StatusDeps {
  nc: NatsConnection;
  orm: MikroORM;
  directory: AgentDirectory;
  clock: Clock;
  log: Logger;
  staleTimeoutSeconds: number;
  integrations?: IntegrationSink;
}

interface StatusRow {
  id: string;
  agent_id: string | null;
  environment_id: string;
  client_id: string;
  hostname: string;
  agent_status: 'online' | 'offline';
  last_seen_at?: Date | string | null;
}

function statusEvent(row: StatusRow, agentId: string, status: 'online' | 'offline', at: Date): AgentStatusChanged {
  return {
    host_id: row.id,
    agent_id: agentId,
    environment_id: row.environment_id,
    client_id: row.client_id,
    hostname: row.hostname,
    status,
    previous: row.agent_status,
    at: at.toISOString(),
  };
}

export interface HeartbeatItem {
  agent: AgentRef;
  hb: Heartbeat;
  at: Date;
}

const FACTS = [
  'hostname',
  'ip_address',
  'os',
  'os_version',
  'kernel_version',
  'arch',
  'cpu_cores',
  'memory_total_bytes',
] as const;

/** A heartbeat as a row of jsonb_to_recordset(…) AS v(HEARTBEAT_COLUMNS); facts it did not send are null. */
const heartbeatRow = ({ agent, hb, at }: HeartbeatItem): Record<string, unknown> => ({
  host_id: agent.host_id,
  agent_id: agent.agent_id,
  at: at.toISOString(),
  agent_version: hb.agent_version,
  ...(hb.facts ? Object.fromEntries(FACTS.map((f) => [f, hb.facts![f]])) : {}),
});
const HEARTBEAT_COLUMNS = `host_id uuid, agent_id uuid, at timestamptz, agent_version text, hostname text, ip_address text, os text,
  os_version text, kernel_version text, arch text, cpu_cores integer, memory_total_bytes bigint`;
/**
 * A host twice in one batch (an agent flushing its outbox): its latest heartbeat counts, with the facts of the latest
 * one that sent them. (Integration statuses are stored from every heartbeat: each report is of its own integrations.)
 */
export function latestPerHost<T extends HeartbeatItem>(items: readonly T[]): Map<string, T> {
  const latest = new Map<string, T>();
  for (const i of items) {
    const seen = latest.get(i.agent.host_id);
    if (!seen) latest.set(i.agent.host_id, i);
    else if (seen.at <= i.at)
      latest.set(i.agent.host_id, !i.hb.facts && seen.hb.facts ? { ...i, hb: { ...i.hb, facts: seen.hb.facts } } : i);
  }
  return latest;
}

/**
 * The dedupe id of a host's going online: the same for every delivery of the heartbeats that bring it online from one
 * offline spell (the row's last_seen_at does not move until one commits), so a batch rolled back and redelivered in
 * other company publishes the event once.
 */
const onlineMsgId = (row: StatusRow, agentId: string): string =>
  `agent-status:${row.id}:online:${agentId}:${row.last_seen_at ? new Date(row.last_seen_at).getTime() : 'never'}`;

/** Publishes every event, and fails with the first failure only once none is still in flight. */
async function publishAll(publishes: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(publishes)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}
/** Facts a heartbeat did not send keep their stored values. */
const KEEP_FACTS = FACTS.map((f) => `${f} = coalesce(v.${f}, h.${f})`).join(', ');

/**
 * Heartbeats: `last_seen_at` (the server's clock, not the agent's), agent version, facts when sent, integration
 * statuses; the host goes online. At fleet scale (a thousand agents every 10 s) one statement per heartbeat would be
 * most of the ingest's database work, so heartbeats of hosts already online are written in batches: one UPDATE for
 * the hosts and one upsert for their integrations, in one transaction (a heartbeat is never seen half-applied, and
 * the host rows stay locked while their integrations are written, the order snapshots take them in), each message
 * acknowledged once its batch is stored. A heartbeat of a host not yet online (first contact, or back after an
 * outage: the whole fleet at once after a broker outage) is written in a batch of its own, one transaction per
 * batch: the durable `agent_status` events are published inside it, before the commit, so a failed publish rolls
 * the change back and the heartbeats are redelivered. One heartbeat at a time, 2,000 agents coming online held the
 * heartbeats queued behind them for 14 s. A heartbeat whose host is locked by another transaction takes the slow
 * path, a transaction of its own that waits for that host alone.
 */
export function startHeartbeatIngest(deps: StatusDeps): Promise<ConsumerHandle> {
  /** The integration statuses of every heartbeat whose host was stored (each report is of its own integrations). */
  const storeIntegrations = async (em: EntityManager, items: HeartbeatItem[], stored: Set<string>): Promise<void> => {
    const reports = items.filter((i) => stored.has(i.agent.host_id) && i.hb.integrations?.length);
    if (reports.length === 0 || !deps.integrations) return;
    await deps.integrations(
      em,
      reports.map((i) => ({
        host: { id: i.agent.host_id, client_id: i.agent.client_id },
        reports: i.hb.integrations!,
        at: i.at,
      })),
    );
  };
  const batcher = new MicroBatcher<HeartbeatItem, boolean>({
    maxItems: 250,
    maxDelayMs: 50,
    write: async (items) => {
      const rows = [...latestPerHost(items).values()].map(heartbeatRow);
      // A host twice in one batch (an agent flushing its outbox): its latest heartbeat counts (latestPerHost). A host whose row is
      // locked (its inventory snapshot being stored, a transaction of a few hundred ms) is skipped, not waited for:
      // waiting held the whole batch, and every heartbeat queued behind it, for as long as any one snapshot (p99
      // 5 s at 1,000 agents). A skipped heartbeat takes the slow path, which waits for that host alone.
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
        await storeIntegrations(tx, items, stored);
        return stored;
      });
      return items.map((i) => done.has(i.agent.host_id));
    },
  });

  const transitions = new MicroBatcher<HeartbeatItem, boolean>({
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
        await storeIntegrations(tx, items, locked);
        return locked;
      });
      return items.map((i) => done.has(i.agent.host_id));
    },
  });

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

  const slowPath = async (agent: AgentRef, hb: Heartbeat, at: Date): Promise<void> => {
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
      if ((await inBatch(batcher, item)) || (await inBatch(transitions, item))) return;
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
    const cutoff = new Date(deps.clock.now() - timeoutMs);
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
