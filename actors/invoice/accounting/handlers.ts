import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { requirePermission } from '../../../contracts/access.ts';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import { Headers } from '../../../contracts/envelope.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Config } from '../../../platform/config.ts';
import { publishDurable } from '../../../platform/jetstream.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { editorOf, WRITE } from '../invoices/handlers.ts';
import { recordHistory } from '../invoices/history.ts';
import { sql } from '../invoices/store.ts';
import { readSyncRow } from './state.ts';
import { accountingConfigured, SYNC_SUBJECT, SYNCABLE } from './worker.ts';

/**
 * sync-accounting: queues a push, answering once JetStream has stored it. Under the invoice's row lock:
 * - synced at the current version: nothing is queued (the accounting system already holds exactly this version);
 * - queued: the same job is published again with the same Nats-Msg-Id, so a double click queues once;
 * - otherwise (never synced, failed, or synced at an older version): a new job, attempt + 1, state queued.
 * The publish happens before the commit: a failed publish leaves nothing changed (503), and a commit lost after it
 * leaves a job the worker still runs correctly (it reads the invoice when it runs).
 */
export function accountingHandlers(deps: {
  orm: MikroORM;
  nc: NatsConnection;
  config: Config;
}): Handlers<SystemCatalogue, 'invoice'> {
  return {
    'svc.invoice.sync_accounting': async ({ id }, { ctx }) => {
      requirePermission(ctx, WRITE);
      return deps.orm.em.fork().transactional(async (tx) => {
        const row = await readSyncRow(tx, id, true);
        if (!row) throw new DomainError('not_found', 'invoice not found');
        if (!accountingConfigured(deps.config))
          throw new DomainError(
            'bad_request',
            'the accounting integration is not configured: set SVC_ACCOUNTING_URL and SVC_ACCOUNTING_TOKEN',
          );
        if (!(SYNCABLE as readonly string[]).includes(row.status))
          throw new DomainError(
            'bad_request',
            `only an approved or sent invoice can be synced to accounting; this invoice is ${row.status}`,
          );
        if (row.accounting_sync_state === 'synced' && row.accounting_synced_version === row.version) {
          return {
            message: `already synced to accounting as ${row.accounting_external_id ?? '?'} (version ${row.version}); nothing queued`,
          };
        }
        const requeue = row.accounting_sync_state === 'queued' && row.accounting_sync_attempt > 0;
        const attempt = requeue ? row.accounting_sync_attempt : row.accounting_sync_attempt + 1;
        try {
          await publishDurable(
            deps.nc,
            SYNC_SUBJECT,
            { invoice_id: id, version: row.version, attempt, requested_by: editorOf(ctx) },
            { msgId: `accounting-sync:${id}:${attempt}`, headers: { [Headers.requestId]: ctx.request_id } },
          );
        } catch (err) {
          throw new DomainError(
            'unavailable',
            `the accounting sync could not be queued: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
        if (requeue) return { message: `accounting sync already queued (attempt ${attempt})` };
        await sql(
          tx,
          `UPDATE invoices SET accounting_sync_state = 'queued', accounting_sync_at = now(), accounting_sync_error = NULL, accounting_sync_attempt = ? WHERE id = ?`,
          [attempt, id],
        );
        await recordHistory(tx, id, editorOf(ctx), [
          {
            edit_type: 'accounting_sync',
            field_name: 'accounting_sync_state',
            old_value: row.accounting_sync_state,
            new_value: `queued (version ${row.version})`,
          },
        ]);
        return { message: `accounting sync queued (attempt ${attempt})` };
      });
    },
  };
}
