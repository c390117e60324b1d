import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createChdbConnection } from 'chdb/connection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AnalyticsError,
  openAnalytics,
  openChdbAnalytics,
  openClickHouseAnalytics,
  type AnalyticsStore,
  type ClickHouseAnalyticsOptions,
} from '../../actors/invoice/analytics/store.ts';
import { migrateAnalytics } from '../../actors/invoice/analytics/migrations/runner.ts';
import { analyticsMigrations } from '../../actors/invoice/analytics/migrations/index.ts';

// A private chDB directory: libchdb allows one data directory per process, and this file must not touch the one
// other test files use.
const dir = resolve(`./data/tmp-analytics-${randomUUID().slice(0, 8)}`);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Row {
  id: string;
  at: string;
  amount: string;
  note: string;
  tags: string[];
}

/** The same SQL against every engine: what the invoicing domain relies on. */
function contract(name: string, open: () => Promise<AnalyticsStore>, expectedKind: AnalyticsStore['kind']): void {
  describe(name, () => {
    let store: AnalyticsStore;
    const table = `usage_probe_${name.replace(/\W+/g, '_')}_${randomUUID().slice(0, 6)}`;

    beforeAll(async () => {
      store = await open();
      await store.command(`CREATE TABLE IF NOT EXISTS ${table}
        (id UInt64, at DateTime64(3, 'UTC'), amount Decimal(18, 4), note String, tags Array(String))
        ENGINE = MergeTree ORDER BY (id, at)`);
    });
    afterAll(async () => {
      await store.command(`DROP TABLE IF EXISTS ${table}`);
      await store.close();
    });

    it('reports its engine and answers ping', async () => {
      expect(store.kind).toBe(expectedKind);
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it('inserts JSON rows and reads them back with bound parameters, exact decimals and 64-bit ids', async () => {
      await store.insert(table, [
        // 2^63 + 7 and 14 integer digits: both lose precision as JS numbers, so they must arrive as strings.
        {
          id: 9223372036854775815n,
          at: new Date('2024-05-01T10:00:00.123Z'),
          amount: '12345678901234.5678',
          note: "it's a \\ test\nline",
          tags: ['a', 'b'],
        },
        { id: 2, at: '2024-05-02T00:00:00Z', amount: '0.0001', note: "x' OR 1=1 --", tags: [] },
        { id: 3, at: '2024-04-30 23:59:59', amount: '-5', note: 'old', tags: ['b'] },
      ]);

      const rows = await store.query<Row>(
        `SELECT id, at, amount, note, tags FROM ${table} WHERE at >= {since:DateTime64(3)} ORDER BY at`,
        {
          since: new Date('2024-05-01T00:00:00Z'),
        },
      );
      expect(rows).toEqual([
        {
          id: '9223372036854775815',
          at: '2024-05-01 10:00:00.123',
          amount: '12345678901234.5678',
          note: "it's a \\ test\nline",
          tags: ['a', 'b'],
        },
        { id: '2', at: '2024-05-02 00:00:00.000', amount: '0.0001', note: "x' OR 1=1 --", tags: [] },
      ]);

      // A parameter is a value, never SQL: the injection attempt matches only its own row.
      const byNote = await store.query<{ id: string }>(`SELECT id FROM ${table} WHERE note = {note:String}`, {
        note: "x' OR 1=1 --",
      });
      expect(byNote).toEqual([{ id: '2' }]);

      const sum = await store.query<{ total: string; n: string }>(
        `SELECT sum(amount) AS total, count() AS n FROM ${table} WHERE has({tags:Array(String)}, tags[1]) AND id != {skip:UInt64}`,
        { tags: ['a', 'b'], skip: 9223372036854775815n },
      );
      expect(sum).toEqual([{ total: '-5', n: '1' }]);

      // A Date with whole seconds also binds to a plain DateTime parameter.
      const whole = await store.query<{ n: string }>(
        `SELECT count() AS n FROM ${table} WHERE toDateTime(at) < {t:DateTime}`,
        { t: new Date('2024-05-01T00:00:00Z') },
      );
      expect(whole).toEqual([{ n: '1' }]);
    });

    it('works in UTC whatever the host time zone (Date parameters and DateTime output)', async () => {
      const rows = await store.query<{ u: string; shown: string }>(
        'SELECT toUnixTimestamp({t:DateTime}) AS u, toString(toDateTime({s:UInt32})) AS shown',
        {
          t: new Date('2024-01-01T00:00:00Z'),
          s: 1704067200,
        },
      );
      expect(rows).toEqual([{ u: 1704067200, shown: '2024-01-01 00:00:00' }]);
    });

    it('returns no rows as an empty array and treats an empty insert as a no-op', async () => {
      await store.insert(table, []);
      expect(await store.query(`SELECT * FROM ${table} WHERE id = {id:UInt64}`, { id: 424242 })).toEqual([]);
    });

    it('raises AnalyticsError with the ClickHouse code and type', async () => {
      const err: unknown = await store.query('SELECT * FROM no_such_table_here').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AnalyticsError);
      expect((err as AnalyticsError).code).toBe(60);
      expect((err as AnalyticsError).type).toBe('UNKNOWN_TABLE');
    });

    it('refuses table names that are not plain identifiers', async () => {
      await expect(store.insert('x; DROP TABLE y', [{ a: 1 }])).rejects.toThrow(/invalid table name/);
    });

    it('applies analytics migrations once', async () => {
      const first = await migrateAnalytics(store);
      const second = await migrateAnalytics(store);
      expect(second).toEqual([]);
      // The chDB suites share one directory, so whichever ran first applied the list.
      expect(first.every((id) => analyticsMigrations.some((m) => m.id === id))).toBe(true);
      const recorded = await store.query<{ id: string }>('SELECT id FROM schema_migrations FINAL ORDER BY id');
      expect(recorded.map((r) => r.id)).toEqual(analyticsMigrations.map((m) => m.id));
    });
  });
}

contract('chdb', () => openAnalytics({ SVC_CLICKHOUSE_URL: undefined, SVC_ANALYTICS_PATH: dir }), 'chdb');

// The @clickhouse/client code path, driven through chDB's drop-in Connection for that client (no server needed):
// exercises the server adapter's query/insert/command/ping, settings and parameter handling in every run.
// chdb types its Connection against the separate @clickhouse/client-common package, which @clickhouse/client 1.23
// embeds its own copy of; the runtime contract is the same, the declarations merely differ in a settings type.
// chdb/connection is typed against its own copy of @clickhouse/client-common, which differs in details from the copy
// inside @clickhouse/client (ClickHouseSettings): structurally the same Connection at run time, so the cast is sound.
const chdbConnection = () => createChdbConnection({ path: dir }) as unknown as ClickHouseAnalyticsOptions['connection'];
contract(
  'clickhouse client over chdb/connection',
  () => openClickHouseAnalytics({ connection: chdbConnection() }),
  'clickhouse',
);

describe.skipIf(!process.env.SVC_CLICKHOUSE_URL)('clickhouse server (SVC_CLICKHOUSE_URL)', () => {
  contract(
    'server',
    () => openAnalytics({ SVC_CLICKHOUSE_URL: process.env.SVC_CLICKHOUSE_URL, SVC_ANALYTICS_PATH: dir }),
    'clickhouse',
  );
});

describe('chDB session sharing', () => {
  it('shares one session per path: closing one handle leaves the other working, data persists across reopen', async () => {
    const a = await openChdbAnalytics(dir);
    const b = await openChdbAnalytics(`${dir}/.`); // same directory, different spelling
    await a.command('CREATE TABLE IF NOT EXISTS share_probe (v UInt8) ENGINE = MergeTree ORDER BY v');
    await a.insert('share_probe', [{ v: 7 }]);
    await a.close();
    await a.close(); // idempotent: must not release b's reference
    await expect(a.query('SELECT 1')).rejects.toThrow(/closed/);
    expect(await b.query('SELECT v FROM share_probe')).toEqual([{ v: 7 }]);
    await b.close();

    const c = await openChdbAnalytics(dir);
    expect(await c.query('SELECT v FROM share_probe')).toEqual([{ v: 7 }]);
    await c.command('DROP TABLE share_probe');
    await c.close();
  });

  it('refuses a second data directory while one is open', async () => {
    const a = await openChdbAnalytics(dir);
    try {
      await expect(openChdbAnalytics(`${dir}-other`)).rejects.toThrow(/one data directory per process/);
    } finally {
      await a.close();
    }
  });
});
