import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { InventorySnapshot } from '../../../contracts/domains/agent-telemetry.ts';
import { NonRetryableError, type ConsumerHandle } from '../../../platform/jetstream.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Logger } from '../../../platform/logger.ts';
import { sqlStateOf } from '../../../platform/store-errors.ts';
import { runTelemetryConsumer, type AgentDirectory } from '../telemetry/consume.ts';
import { storeSnapshot, type SnapshotOutcome } from './snapshot-store.ts';

/** Durable name of the inventory ingest (`-<namespace>` is added under SVC_NAMESPACE); dead letters on `svc.dlq.<it>`. */
export const INVENTORY_DURABLE = 'fleet-telemetry-inventory';

/**
 * Snapshots written at once by one process. Each holds one pooled connection for its transaction; the pool is shared
 * with the request handlers, so this stays well below its size.
 */
const CONCURRENCY = 4;

export interface InventoryIngestDeps {
  nc: NatsConnection;
  orm: MikroORM;
  directory: AgentDirectory;
  clock: Clock;
  log: Logger;
}

/** SQLSTATE classes a repeat cannot fix: data exceptions (22: a value out of range) and integrity violations (23). */
const isDataError = (err: unknown): boolean => /^2[23]/.test(sqlStateOf(err) ?? '');

/**
 * The durable consumer of `svc.agent.*.inventory`: each snapshot replaces its host's inventory (snapshot-store.ts).
 * A snapshot the store refuses as data is dead-lettered at once; a store outage is retried with backoff.
 */
export function startInventoryIngest(deps: InventoryIngestDeps): Promise<ConsumerHandle> {
  return runTelemetryConsumer({
    nc: deps.nc,
    directory: deps.directory,
    kind: 'inventory',
    durable: INVENTORY_DURABLE,
    schema: InventorySnapshot,
    concurrency: CONCURRENCY,
    log: deps.log,
    handler: async (agent, snapshot, meta) => {
      let outcome: SnapshotOutcome;
      try {
        outcome = await storeSnapshot(deps.orm.em.fork(), agent, snapshot, new Date(deps.clock.now()));
      } catch (err) {
        if (isDataError(err))
          throw new NonRetryableError(
            `the store refused the snapshot: ${err instanceof Error ? err.message : String(err)}`,
            { cause: err },
          );
        throw err;
      }
      if (outcome.kind === 'no_host') {
        // The directory's entry is older than the host's removal or re-enrolment: look again next time.
        deps.directory.forget(agent.agent_id);
        throw new NonRetryableError(`host ${agent.host_id} is no longer enrolled with agent ${agent.agent_id}`);
      }
      if (outcome.kind === 'stale') {
        meta.log.debug(
          { host_id: agent.host_id, collected_at: snapshot.collected_at },
          'inventory snapshot not newer than the stored one; skipped',
        );
        return;
      }
      if (Object.keys(outcome.duplicates).length > 0) {
        meta.log.warn(
          { host_id: agent.host_id, duplicates: outcome.duplicates },
          'inventory snapshot repeated keys; the first record of each was kept',
        );
      }
      meta.log.debug({ host_id: agent.host_id, statements: outcome.statements }, 'inventory snapshot stored');
    },
  });
}
