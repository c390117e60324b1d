import { randomUUID } from 'node:crypto';
import { Migration } from '@mikro-orm/migrations';
import { defineEntity, p } from '@mikro-orm/postgresql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { openOrm, type MikroORM } from '../../platform/stores/postgres.ts';
import { postgresMigrations } from '../../migrations/postgres/index.ts';
import { migratePostgres, runMigrations } from '../../migrations/run.ts';
import { testConfig } from '../support/env.ts';

const log = createLogger('silent');
const config = testConfig();
// A throwaway schema for the tests that need a clean slate; the shared `public` schema is only ever migrated forward.
const schema = `store_test_${randomUUID().slice(0, 8)}`;

class CreateProbeTable extends Migration {
  override up(): void {
    this.addSql('create table store_probe (id serial primary key, label text not null unique)');
  }
}
const testMigrations = [
  { name: 'Migration0001_foundation', class: postgresMigrations[0]!.class },
  { name: 'Migration9001_store_probe', class: CreateProbeTable },
];

const StoreProbe = defineEntity({
  name: 'StoreProbe',
  tableName: 'store_probe',
  schema,
  properties: {
    id: p.integer().primary().autoincrement(),
    label: p.string(),
  },
});

let orm: MikroORM;

beforeAll(async () => {
  orm = await openOrm({ url: config.SVC_DB_URL, entities: [StoreProbe], log, migrations: testMigrations });
});

afterAll(async () => {
  await orm.em.fork().getConnection().execute(`drop schema if exists "${schema}" cascade`);
  await orm.close();
});

describe('openOrm', () => {
  it('runs SQL on a forked entity manager', async () => {
    const rows = await orm.em.fork().getConnection().execute<{ answer: number }[]>('select 40 + ? as answer', [2]);
    expect(rows).toEqual([{ answer: 42 }]);
  });

  it('refuses the global entity manager for unit-of-work operations (allowGlobalContext: false)', async () => {
    await expect(orm.em.find(StoreProbe, {})).rejects.toThrow(/global EntityManager/);
  });
});

describe('postgres migrations', () => {
  it('applies the project list idempotently through runMigrations (second run applies nothing)', async () => {
    await runMigrations(config, log);
    const again = await runMigrations(config, log);
    expect(again).toEqual({ postgres: [], analytics: [] });
    const rows = await orm.em
      .fork()
      .getConnection()
      .execute<{ name: string }[]>('select name from public.mikro_orm_migrations order by id');
    const names = rows.map((r) => r.name);
    for (const m of postgresMigrations) expect(names.filter((n) => n === m.name)).toHaveLength(1);
    const ext = await orm.em
      .fork()
      .getConnection()
      .execute<{ n: number }[]>("select count(*)::int as n from pg_extension where extname = 'pgcrypto'");
    expect(ext[0]?.n).toBe(1);
  });

  it('migrates once when several processes start together (advisory lock), then entities work in a fork', async () => {
    // Separate ORMs = separate pools, as separate replicas would have.
    const others = await Promise.all(
      [1, 2, 3].map(() => openOrm({ url: config.SVC_DB_URL, log, migrations: testMigrations, poolMax: 2 })),
    );
    try {
      const results = await Promise.all([orm, ...others].map((o) => migratePostgres(o, log, { schema })));
      expect(results.flat().sort()).toEqual(['Migration0001_foundation', 'Migration9001_store_probe']);
      expect(results.filter((r) => r.length > 0)).toHaveLength(1);
    } finally {
      await Promise.all(others.map((o) => o.close()));
    }
    const tracked = await orm.em
      .fork()
      .getConnection()
      .execute<{ name: string }[]>(`select name from "${schema}".mikro_orm_migrations order by id`);
    expect(tracked.map((r) => r.name)).toEqual(['Migration0001_foundation', 'Migration9001_store_probe']);
    expect(await migratePostgres(orm, log, { schema })).toEqual([]);

    const em = orm.em.fork();
    em.create(StoreProbe, { label: 'first' });
    await em.flush();
    const found = await orm.em.fork().findOneOrFail(StoreProbe, { label: 'first' });
    expect(found.id).toBeGreaterThan(0);
  });

  it('rolls back a failing batch entirely', async () => {
    class Broken extends Migration {
      override up(): void {
        this.addSql('create table store_probe_partial (id int)');
        this.addSql('select no_such_function()');
      }
    }
    const failing = await openOrm({
      url: config.SVC_DB_URL,
      log,
      migrations: [...testMigrations, { name: 'Migration9002_broken', class: Broken }],
    });
    try {
      await expect(migratePostgres(failing, log, { schema })).rejects.toThrow(/no_such_function/);
      const exists = await failing.em
        .fork()
        .getConnection()
        .execute<{ t: string | null }[]>(`select to_regclass('"${schema}".store_probe_partial')::text as t`);
      expect(exists[0]?.t).toBeNull();
      const tracked = await failing.em
        .fork()
        .getConnection()
        .execute<{ name: string }[]>(`select name from "${schema}".mikro_orm_migrations`);
      expect(tracked.map((r) => r.name)).not.toContain('Migration9002_broken');
    } finally {
      await failing.close();
    }
  });
});
