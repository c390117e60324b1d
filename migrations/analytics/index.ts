/**
 * Analytics-store (ClickHouse / chDB) DDL, in the order it applies. Append only; never edit an applied entry.
 *
 * ClickHouse has no transactional DDL: a crash between statements re-runs the whole entry on the next attempt, so
 * every statement must be idempotent (`CREATE TABLE IF NOT EXISTS`, `ADD COLUMN IF NOT EXISTS`, ...). One statement
 * per array element (the server's HTTP interface refuses multi-statement queries).
 */
export interface AnalyticsMigration {
  /** Sortable, unique, stable: `NNNN_description`. Recorded in `schema_migrations`. */
  id: string;
  sql: readonly string[];
}

/**
 * The tracking table. ReplacingMergeTree keyed by id: a migration recorded twice (two processes migrating at once)
 * collapses to one row, and reads use FINAL.
 */
export const SCHEMA_MIGRATIONS_DDL = `CREATE TABLE IF NOT EXISTS schema_migrations
(
  id String,
  applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY id`;

export const analyticsMigrations: readonly AnalyticsMigration[] = [
  // The runner creates the tracking table before it can read it; recording it as 0001 versions the table itself,
  // so a later change to it is an ordinary migration.
  { id: '0001_schema_migrations', sql: [SCHEMA_MIGRATIONS_DDL] },
];
