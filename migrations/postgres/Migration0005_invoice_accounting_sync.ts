import { Migration } from '@mikro-orm/migrations';

/**
 * Accounting sync (sync-accounting): what the invoice knows about its push to the accounting system.
 * - `accounting_sync_state`: null (never asked), `queued` (a push is on the work subject or being retried), `synced`,
 *   `failed` (dead-lettered: a permanent refusal or the attempts ran out); `accounting_sync_at` is when it last changed.
 * - `accounting_external_id`: the accounting system's id of the last successful push (kept when a later one fails).
 * - `accounting_sync_error`: the last failure (a retried one while queued, the final one when failed); null once synced.
 * - `accounting_synced_version`: the invoice version the accounting system holds (the Idempotency-Key's version).
 * - `accounting_sync_attempt`: counts pushes asked for; part of the Nats-Msg-Id so a double click queues once while a
 *   new request after a failure or a change is a new message.
 * Not part of `version`: a sync changes nothing of the invoice itself, and the version is the push's idempotency key.
 */
export class Migration0005_invoice_accounting_sync extends Migration {
  override up(): void {
    this.addSql(`
      ALTER TABLE invoices
        ADD COLUMN accounting_sync_state text CHECK (accounting_sync_state IN ('queued', 'synced', 'failed')),
        ADD COLUMN accounting_sync_at timestamptz,
        ADD COLUMN accounting_external_id text,
        ADD COLUMN accounting_sync_error text,
        ADD COLUMN accounting_synced_version integer,
        ADD COLUMN accounting_sync_attempt integer NOT NULL DEFAULT 0;
    `);
  }
}
