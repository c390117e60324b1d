import { Migration } from '@mikro-orm/migrations';

/**
 * Inventory ingest:
 * - `hosts.inventory_digests`: per inventory table, a digest of what the last stored snapshot put there. A snapshot
 *   whose member has the same digest leaves that table alone: most of a machine (its ~2,000 packages, users, services)
 *   does not change between two snapshots five minutes apart, and re-reading it would be most of the ingest's work.
 * - `integrations.origin`: integration types an agent reported without the catalogue knowing them are added by the
 *   ingest (name = id, category `other`) as `agent`; such a type is listed only to callers who can read a host that
 *   has it, so one tenant's private collector names never show to another tenant.
 */
export class Migration0008_fleet_inventory extends Migration {
  override up(): void {
    this.addSql(`
      ALTER TABLE hosts ADD COLUMN inventory_digests jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(inventory_digests) = 'object');
      ALTER TABLE integrations ADD COLUMN origin text NOT NULL DEFAULT 'catalogue' CHECK (origin IN ('catalogue', 'agent'));
    `);
  }

  override down(): void {
    this.addSql(`
      ALTER TABLE hosts DROP COLUMN IF EXISTS inventory_digests;
      ALTER TABLE integrations DROP COLUMN IF EXISTS origin;
    `);
  }
}
