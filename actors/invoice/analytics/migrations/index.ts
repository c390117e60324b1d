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

/**
 * What an invoice is built from: usage and time-tracking records
 * (docs/api/invoicing.md#analytics-model-clickhouse--chdb). Every table is a ReplacingMergeTree keyed by the record's
 * natural id and versioned by `ingested_at`: a batch delivered twice (JetStream redelivery, a seed run again) leaves
 * one row per id, and readers use FINAL. Money and hours are Decimals (never Float). Worklogs and usage records are
 * ordered by (application_key, id): the application prefixes every read, and a record whose date changes is still the
 * same row (a worklog never moves to another application).
 */
const INVOICING_MODEL: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS customers
(
  customer_key String,
  name String,
  email String,
  address String,
  country LowCardinality(String),
  vat_id String,
  ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY customer_key`,
  `CREATE TABLE IF NOT EXISTS applications
(
  application_key String,
  customer_key String,
  name String,
  is_active Bool,
  deal_type LowCardinality(String),
  currency LowCardinality(String),
  base_amount Decimal(18, 2),
  included_hours Decimal(18, 4),
  hourly_rate Decimal(18, 2),
  overtime_rate Decimal(18, 2),
  ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY application_key`,
  `CREATE TABLE IF NOT EXISTS rate_tiers
(
  rate_tier String,
  name String,
  multiplier Decimal(9, 4),
  ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY rate_tier`,
  `CREATE TABLE IF NOT EXISTS worklogs
(
  worklog_id String,
  application_key String,
  tracker_key String,
  linked_issue_key String,
  description String,
  author String,
  worklog_date Date,
  time_seconds UInt32,
  billable_seconds UInt32,
  rate_tier String,
  ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (application_key, worklog_id)`,
  `CREATE TABLE IF NOT EXISTS usage_records
(
  record_id String,
  application_key String,
  metric String,
  unit String,
  usage_date Date,
  quantity Decimal(18, 4),
  unit_price Decimal(18, 6),
  ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (application_key, record_id)`,
];

export const analyticsMigrations: readonly AnalyticsMigration[] = [
  // The runner creates the tracking table before it can read it; recording it as 0001 versions the table itself,
  // so a later change to it is an ordinary migration.
  { id: '0001_schema_migrations', sql: [SCHEMA_MIGRATIONS_DDL] },
  { id: '0002_invoicing_model', sql: INVOICING_MODEL },
];
