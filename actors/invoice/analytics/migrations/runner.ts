import type { AnalyticsStore } from '../store.ts';
import type { Logger } from '../../../../platform/logger.ts';
import { analyticsMigrations, SCHEMA_MIGRATIONS_DDL, type AnalyticsMigration } from './index.ts';

/**
 * Applies the pending analytics migrations in list order and records each in `schema_migrations` after all its
 * statements succeeded. Safe to run repeatedly and (given idempotent DDL) concurrently. Returns the ids it applied.
 */
export async function migrateAnalytics(
  store: AnalyticsStore,
  log?: Logger,
  migrations: readonly AnalyticsMigration[] = analyticsMigrations,
): Promise<string[]> {
  checkList(migrations);
  await store.command(SCHEMA_MIGRATIONS_DDL);
  const rows = await store.query<{ id: string }>('SELECT id FROM schema_migrations FINAL');
  const done = new Set(rows.map((r) => r.id));
  const applied: string[] = [];
  for (const m of migrations) {
    if (done.has(m.id)) continue;
    log?.info({ migration: m.id, engine: store.kind }, 'applying analytics migration');
    for (const sql of m.sql) await store.command(sql);
    await store.insert('schema_migrations', [{ id: m.id }]);
    applied.push(m.id);
  }
  return applied;
}

function checkList(migrations: readonly AnalyticsMigration[]): void {
  const seen = new Set<string>();
  let previous = '';
  for (const m of migrations) {
    if (seen.has(m.id)) throw new Error(`analytics migration ${m.id} is listed twice`);
    if (m.id <= previous) throw new Error(`analytics migration ${m.id} is out of order (after ${previous})`);
    seen.add(m.id);
    previous = m.id;
  }
}
