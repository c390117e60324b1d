import type { NatsConnection } from '@nats-io/transport-node';
import type { AnalyticsBatch } from '../../../contracts/domains/invoice-ingest.ts';
import { payloadSchema } from '../../../contracts/streams.ts';
import { runConsumer, type ConsumerHandle } from '../../../platform/jetstream.ts';
import type { Logger } from '../../../platform/logger.ts';
import type { AnalyticsStore } from './store.ts';

export const INGEST_SUBJECT = 'svc.work.invoice.analytics_ingest';
/** The durable consumer's name (namespaced on the wire); the seed command watches it drain. */
export const INGEST_DURABLE = 'invoice-analytics-ingest';

/** Table of each record kind, in the order a batch is written (parents before children, for readers in between). */
const TABLES = [
  ['customers', 'customers'],
  ['applications', 'applications'],
  ['rate_tiers', 'rate_tiers'],
  ['worklogs', 'worklogs'],
  ['usage_records', 'usage_records'],
] as const satisfies readonly (readonly [keyof AnalyticsBatch, string])[];

/**
 * Writes one batch. Idempotent: every table is a ReplacingMergeTree keyed by the record's natural id, so a batch
 * written again (redelivery after a crash between insert and ack, a producer retrying) leaves one row per id. A batch
 * is not atomic across tables; a partly written one is completed by its redelivery.
 */
export async function storeBatch(store: AnalyticsStore, batch: AnalyticsBatch): Promise<void> {
  for (const [kind, table] of TABLES) {
    const rows = batch[kind];
    if (rows.length > 0) await store.insert(table, rows as readonly Record<string, unknown>[]);
  }
}

/** The ingest consumer: one batch at a time (chDB serializes writes anyway), retried with backoff, then dead-lettered. */
export function startIngestConsumer(nc: NatsConnection, store: AnalyticsStore, log: Logger): Promise<ConsumerHandle> {
  return runConsumer({
    nc,
    stream: 'SVC_WORK',
    durable: INGEST_DURABLE,
    filterSubjects: [INGEST_SUBJECT],
    schema: payloadSchema(INGEST_SUBJECT),
    maxDeliver: 8,
    ackWaitMs: 60_000,
    log,
    handler: async (batch, meta) => {
      await storeBatch(store, batch);
      meta.log.debug({ batch_id: batch.batch_id, worklogs: batch.worklogs.length }, 'analytics batch stored');
    },
  });
}
