import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEntities } from '../../actors/index.ts';
import { createLogger } from '../../platform/logger.ts';
import { Stores } from '../../platform/stores/index.ts';
import { pageOf } from '../../platform/stores/sql.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { testConfig } from '../support/env.ts';

// pageOf against PostgreSQL: the total and the page come from one statement.
let stores: Stores;
let em: () => EntityManager;

beforeAll(async () => {
  stores = new Stores(testConfig(), createLogger('silent'), { entities: allEntities });
  const orm = await stores.orm();
  em = () => orm.em.fork();
});

afterAll(async () => {
  await stores?.close();
});

// 1..25 with a label, filtered by a parameter the count and the page both use.
const numbers = (min: number) => ({
  columns: `n, 'no ' || n AS label`,
  from: `generate_series(1, 25) AS s(n) WHERE n >= ?`,
  params: [min],
  order: 'n DESC',
});

describe('pageOf', () => {
  it('returns the page in order, with the total of every matching row and no column of its own', async () => {
    const page = await pageOf<{ n: number; label: string }, { n: number; label: string }>(
      em(),
      numbers(6),
      { page: 2, per_page: 7 },
      (rows) => rows,
    );
    expect(page).toEqual({
      total: 20,
      page: 2,
      per_page: 7,
      items: [18, 17, 16, 15, 14, 13, 12].map((n) => ({ n, label: `no ${n}` })),
    });
  });

  it('keeps the total on a page past the end, and reads 0 of nothing', async () => {
    const past = await pageOf(em(), numbers(6), { page: 4, per_page: 7 }, (rows) => rows);
    expect(past).toEqual({ total: 20, page: 4, per_page: 7, items: [] });
    const last = await pageOf(em(), numbers(6), { page: 3, per_page: 7 }, (rows) => rows);
    expect(last.items).toHaveLength(6);
    const none = await pageOf(em(), numbers(100), { page: 1, per_page: 7 }, (rows) => rows);
    expect(none).toEqual({ total: 0, page: 1, per_page: 7, items: [] });
  });
});
