import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { payloadSchema } from '../../../contracts/streams.ts';
import type { Config } from '../../../platform/config.ts';
import { NonRetryableError, RetryLaterError, runConsumer, type ConsumerHandle } from '../../../platform/jetstream.ts';
import type { Logger } from '../../../platform/logger.ts';
import { loadInvoice } from '../invoices/store.ts';
import { pushBody, pushInvoice } from './client.ts';
import { nextDelay } from './retry.ts';
import { markFailed, markSynced, noteRetry, readSyncRow } from './state.ts';

export const SYNC_SUBJECT = 'svc.work.invoice.accounting_sync';
/** The durable consumer's name (namespaced on the wire); its dead letters go to svc.dlq.<name>. */
export const SYNC_DURABLE = 'invoice-accounting-sync';
/** One HTTP attempt; the ack wait leaves room for it and the database writes around it. */
const HTTP_TIMEOUT_MS = 15_000;
const ACK_WAIT_MS = 60_000;

/** Statuses an invoice may be pushed from. */
export const SYNCABLE = ['approved', 'sent'] as const;

export const accountingConfigured = (c: Config): boolean => Boolean(c.SVC_ACCOUNTING_URL && c.SVC_ACCOUNTING_TOKEN);

/**
 * The accounting worker: one durable consumer of `svc.work.invoice.accounting_sync` shared by every instance. Each
 * delivery pushes the invoice as it is now (its current version and key), so a job queued before a `send` pushes
 * the sent invoice. Transient failures are naked with a jittered backoff or the peer's Retry-After; a permanent
 * answer or the last attempt dead-letters the job and marks the invoice failed (onDeadLetter).
 */
export function startAccountingWorker(deps: {
  nc: NatsConnection;
  orm: MikroORM;
  config: Config;
  log: Logger;
}): Promise<ConsumerHandle> {
  const { config } = deps;
  const maxAttempts = config.SVC_ACCOUNTING_MAX_ATTEMPTS;
  const schedule = config.SVC_ACCOUNTING_BACKOFF_MS;
  const retryAfterMaxMs = config.SVC_ACCOUNTING_RETRY_AFTER_MAX_SECONDS * 1000;
  return runConsumer({
    nc: deps.nc,
    stream: 'SVC_WORK',
    durable: SYNC_DURABLE,
    filterSubjects: [SYNC_SUBJECT],
    schema: payloadSchema(SYNC_SUBJECT),
    maxDeliver: maxAttempts,
    backoffMs: schedule,
    ackWaitMs: ACK_WAIT_MS,
    concurrency: 4,
    log: deps.log,
    onDeadLetter: async ({ payload, error }) => {
      if (payload) await markFailed(deps.orm.em.fork(), payload.invoice_id, payload.attempt, error);
    },
    handler: async (job, meta) => {
      const em = deps.orm.em.fork();
      const row = await readSyncRow(em, job.invoice_id);
      if (!row) throw new NonRetryableError('invoice not found (deleted after the sync was queued)');
      // A duplicate after the stream's dedup window, or a job a newer request replaced: nothing left to do.
      if (row.accounting_sync_state === 'synced' && row.accounting_synced_version === row.version) return;
      if (row.accounting_sync_attempt > job.attempt) return;
      if (!(SYNCABLE as readonly string[]).includes(row.status))
        throw new NonRetryableError(`the invoice is ${row.status} now; only an approved or sent invoice is pushed`);
      // Read per delivery: an operator who fixes the variables and restarts lets queued jobs through.
      if (!config.SVC_ACCOUNTING_URL || !config.SVC_ACCOUNTING_TOKEN)
        throw new NonRetryableError('accounting integration not configured (SVC_ACCOUNTING_URL, SVC_ACCOUNTING_TOKEN)');
      const inv = await loadInvoice(em, job.invoice_id);
      const key = `${inv.id}:${inv.version}`;
      const result = await pushInvoice(
        { url: config.SVC_ACCOUNTING_URL, token: config.SVC_ACCOUNTING_TOKEN, timeoutMs: HTTP_TIMEOUT_MS },
        pushBody(inv, row.accounting_external_id),
        key,
        Date.now,
      );
      if (result.ok) {
        await markSynced(em, inv.id, inv.version, result.externalId);
        meta.log.info(
          { invoice_id: inv.id, version: inv.version, external_id: result.externalId },
          'invoice pushed to accounting',
        );
        return;
      }
      if (!result.transient) throw new NonRetryableError(result.error);
      const note = `attempt ${meta.deliveryCount} of ${maxAttempts}: ${result.error}`;
      await noteRetry(em, inv.id, job.attempt, note);
      // The last attempt's failure is dead-lettered by runConsumer; the delay only matters before it.
      const delay = nextDelay({
        retryAfterMs: result.retryAfterMs,
        scheduleMs: schedule,
        attempt: meta.deliveryCount,
        maxMs: retryAfterMaxMs,
      });
      throw new RetryLaterError(note, delay);
    },
  });
}
