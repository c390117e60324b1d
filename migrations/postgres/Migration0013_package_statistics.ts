import { Migration } from '@mikro-orm/migrations';

/**
 * A finer sample for the planner on host_packages' search columns (1,000 instead of the default 100). With ~200
 * packages per host the table holds 20 million rows at 100,000 hosts, and the default sample put a condition that
 * matches 76% of hosts (`package[name = "openssl" AND version < "3.0.13"]`) at estimates an order of magnitude apart
 * from one ANALYZE to the next. Under-estimated, the first page of that search sorted every matching host instead of
 * walking the hostname index and probing each host's packages. The price is a longer ANALYZE of that table, once per
 * autovacuum cycle (the figures: docs/benchmarks.md).
 */
export class Migration0013_package_statistics extends Migration {
  override up(): void {
    this.addSql(
      `ALTER TABLE host_packages ALTER COLUMN name SET STATISTICS 1000, ALTER COLUMN version_key SET STATISTICS 1000;`,
    );
    // The finer sample is taken by the next ANALYZE: taken now, rather than whenever autovacuum next analyses the
    // table (after ~10% of its rows change).
    this.addSql(`ANALYZE host_packages;`);
  }

  override down(): void {
    this.addSql(
      `ALTER TABLE host_packages ALTER COLUMN name SET STATISTICS -1, ALTER COLUMN version_key SET STATISTICS -1;`,
    );
  }
}
