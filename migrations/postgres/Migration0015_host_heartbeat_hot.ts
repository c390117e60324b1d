import { Migration } from '@mikro-orm/migrations';

/**
 * Heartbeats update hosts in place. Each one sets `last_seen_at`; while an index covered that column, no update could
 * be HOT (heap-only): every heartbeat wrote a new entry into all eight of the table's indexes, two of them GIN, 200
 * times a second at 2,000 agents, and without a vacuum in between the table grew many times over within minutes (the
 * fleet bench's figures: docs/benchmarks.md). The index served only the stale sweep, which now reads the online hosts
 * in a scan every quarter of the timeout (at most every 30 s) instead. Free room on each page
 * (fillfactor 80) lets the new row version stay on its page, where page pruning reclaims the old one without a vacuum.
 */
export class Migration0015_host_heartbeat_hot extends Migration {
  override up(): void {
    this.addSql(`DROP INDEX IF EXISTS hosts_online_seen_idx;`);
    this.addSql(`ALTER TABLE hosts SET (fillfactor = 80);`);
  }

  override down(): void {
    this.addSql(`ALTER TABLE hosts RESET (fillfactor);`);
    this.addSql(`CREATE INDEX hosts_online_seen_idx ON hosts (last_seen_at) WHERE agent_status = 'online';`);
  }
}
