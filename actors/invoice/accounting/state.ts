import type { EntityManager } from '@mikro-orm/postgresql';
import type { AccountingSyncState } from '../../../contracts/domains/invoice-accounting.ts';
import type { InvoiceStatus } from '../../../contracts/domains/invoice.ts';
import { recordHistory } from '../invoices/history.ts';
import { sql } from '../invoices/store.ts';

/** The history's editor for what the sync worker records (a request's own entry names its caller). */
export const SYNC_EDITOR = 'system:accounting-sync';

export interface SyncRow {
  id: string;
  status: InvoiceStatus;
  version: number;
  accounting_sync_state: AccountingSyncState | null;
  accounting_external_id: string | null;
  accounting_synced_version: number | null;
  accounting_sync_attempt: number;
}

export async function readSyncRow(em: EntityManager, id: string, lock = false): Promise<SyncRow | undefined> {
  const [row] = await sql<SyncRow>(
    em,
    `SELECT id, status, version, accounting_sync_state, accounting_external_id, accounting_synced_version, accounting_sync_attempt
     FROM invoices WHERE id = ?${lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return (
    row && {
      ...row,
      version: Number(row.version),
      accounting_sync_attempt: Number(row.accounting_sync_attempt),
      accounting_synced_version: row.accounting_synced_version === null ? null : Number(row.accounting_synced_version),
    }
  );
}

/** The push succeeded: the accounting system holds `version` as `externalId`. */
export async function markSynced(em: EntityManager, id: string, version: number, externalId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const [old] = await sql<{ accounting_sync_state: string | null }>(
      tx,
      `SELECT accounting_sync_state FROM invoices WHERE id = ? FOR UPDATE`,
      [id],
    );
    await sql(
      tx,
      `UPDATE invoices SET accounting_sync_state = 'synced', accounting_sync_at = now(), accounting_external_id = ?, accounting_sync_error = NULL, accounting_synced_version = ? WHERE id = ?`,
      [externalId, version, id],
    );
    await recordHistory(tx, id, SYNC_EDITOR, [
      {
        edit_type: 'accounting_sync',
        field_name: 'accounting_sync_state',
        old_value: old?.accounting_sync_state ?? null,
        new_value: `synced ${externalId} (version ${version})`,
      },
    ]);
  });
}

/** A failed attempt that will be retried: the state stays queued, the error says what happened last. */
export async function noteRetry(em: EntityManager, id: string, attempt: number, error: string): Promise<void> {
  await sql(
    em,
    `UPDATE invoices SET accounting_sync_error = ?, accounting_sync_at = now() WHERE id = ? AND accounting_sync_attempt = ? AND accounting_sync_state = 'queued'`,
    [error.slice(0, 1000), id, attempt],
  );
}

/** The push was dead-lettered: failed, unless a newer request has been queued since (it carries the work now). */
export async function markFailed(em: EntityManager, id: string, attempt: number, error: string): Promise<void> {
  await em.transactional(async (tx) => {
    const rows = await sql<{ id: string }>(
      tx,
      `UPDATE invoices SET accounting_sync_state = 'failed', accounting_sync_at = now(), accounting_sync_error = ? WHERE id = ? AND accounting_sync_attempt = ? AND accounting_sync_state = 'queued' RETURNING id`,
      [error.slice(0, 1000), id, attempt],
    );
    if (rows.length > 0)
      await recordHistory(tx, id, SYNC_EDITOR, [
        {
          edit_type: 'accounting_sync',
          field_name: 'accounting_sync_state',
          old_value: 'queued',
          new_value: `failed: ${error.slice(0, 500)}`,
        },
      ]);
  });
}
