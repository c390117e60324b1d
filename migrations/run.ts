import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { loadConfig, type Config } from '../platform/config.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { openOrm, type MikroORM } from '../platform/stores/postgres.ts';
import { migrateAnalytics, openAnalytics, usesEmbeddedAnalytics } from '../actors/invoice/mod.ts';
import { postgresMigrations } from './postgres/index.ts';

export { migrateAnalytics };

/** Arbitrary, fixed key of the advisory lock that serializes migration runs across processes and machines. */
const MIGRATION_LOCK_KEY = 734_201_117;

export interface MigrationReport {
  postgres: string[];
  analytics: string[];
}

/**
 * Applies every pending PostgreSQL migration in one transaction, under a transaction-scoped advisory lock, so
 * replicas that start together migrate once: the others wait, then find nothing pending. The ORM's pool needs at
 * least 2 connections (MikroORM creates its tracking table on a second one while the lock is held).
 * `schema` runs the list against another schema (tests). Returns the names applied.
 */
export async function migratePostgres(orm: MikroORM, log?: Logger, opts: { schema?: string } = {}): Promise<string[]> {
  const conn = orm.em.fork().getConnection();
  const applied = await conn.transactional(async (trx) => {
    await conn.execute('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK_KEY], 'run', trx);
    return orm.migrator.up({ transaction: trx, ...(opts.schema ? { schema: opts.schema } : {}) });
  });
  for (const m of applied) log?.info({ migration: m.name }, 'applied postgres migration');
  return applied.map((m) => m.name);
}

/**
 * Both stores, PostgreSQL first. In-process callers (tests) use this; `npm run migrate` wraps it. The analytics DDL is
 * applied here only on a ClickHouse server: chDB is held by the process running the invoice domain, which applies it
 * at start-up (opening it here would fail with the directory's lock while the system runs).
 */
export async function runMigrations(
  config: Pick<Config, 'SVC_DB_URL' | 'SVC_CLICKHOUSE_URL' | 'SVC_ANALYTICS_PATH'>,
  log: Logger,
): Promise<MigrationReport> {
  const orm = await openOrm({
    url: config.SVC_DB_URL,
    entities: [],
    log,
    poolMax: 2,
    applicationName: 'svc-migrate',
    migrations: postgresMigrations,
  });
  let postgres: string[];
  try {
    postgres = await migratePostgres(orm, log);
  } finally {
    await orm.close();
  }
  if (usesEmbeddedAnalytics(config)) {
    log.info('analytics DDL: applied by the invoice domain when it starts (chDB, no SVC_CLICKHOUSE_URL)');
    return { postgres, analytics: [] };
  }
  const store = await openAnalytics(config);
  let analytics: string[];
  try {
    analytics = await migrateAnalytics(store, log);
  } finally {
    await store.close();
  }
  return { postgres, analytics };
}

async function main(): Promise<number> {
  let log = createLogger(process.env.SVC_LOG_LEVEL || 'info', 'migrate');
  try {
    const config = loadConfig();
    log = createLogger(config.SVC_LOG_LEVEL, 'migrate');
    const report = await runMigrations(config, log);
    log.info(
      { postgres: report.postgres, analytics: report.analytics },
      report.postgres.length + report.analytics.length === 0 ? 'migrations: nothing to apply' : 'migrations applied',
    );
    return 0;
  } catch (err) {
    log.error({ err }, 'migration failed');
    return 1;
  }
}

// Run only as the entry point (`node migrations/run.ts`), not when a test imports runMigrations.
const entry = process.argv[1];
if (entry && import.meta.url === pathToFileURL(realpathSync(entry)).href) {
  process.exitCode = await main();
}
