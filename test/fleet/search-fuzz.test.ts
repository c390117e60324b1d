import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePql, pqlError } from '../../actors/fleet/search/parser.ts';
import { compileWhere, Params, recordCountSql } from '../../actors/fleet/search/compile.ts';
import { readOnlySearch } from '../../actors/fleet/search/run.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { startAdminSystem, userWith } from '../identity/admin-support.ts';
import { FLEET_A, insertFleet } from './search-fixtures.ts';
import { seededRandom } from '../../platform/seeded-random.ts';
import { generator, SEED } from './pql-fuzz.ts';

/**
 * Thousands of random and mutated queries (pql-fuzz.ts): validate, count and search over HTTP answer 200 or 400 —
 * never a 5xx — and agree with each other. (The parser alone, on many more: search-fuzz.unit.test.ts.)
 */

const HTTP_QUERIES = Number(process.env.FUZZ_QUERIES ?? 3000);

describe('fuzz: validate, count and search over HTTP', () => {
  let sys: TestSystem;
  let token: string;
  beforeAll(async () => {
    ({ sys } = await startAdminSystem());
    const client = await createClient(sys);
    await insertFleet(sys, client.id, FLEET_A);
    token = (await userWith(sys, 'Engineer', client.id)).token;
  });
  afterAll(() => sys?.stop());

  it(`never answers 5xx, and the three agree (${HTTP_QUERIES} queries, seed ${SEED})`, async () => {
    const next = generator(seededRandom(SEED));
    const queries = Array.from({ length: HTTP_QUERIES }, next);
    const enc = encodeURIComponent;
    let valid = 0;
    let recordCounts = 0;
    /** A super admin's count of a lone record condition (recordCountSql) equals the hosts form's, in one snapshot. */
    const sameRecordCount = async (q: string, what: string): Promise<void> => {
      const tree = parsePql(q);
      const record = new Params();
      const recordSql = recordCountSql(tree, record);
      if (!recordSql) return;
      recordCounts++;
      const general = new Params();
      const where = compileWhere(tree, general);
      const [a, b] = await readOnlySearch(await sys.stores.orm(), 10_000, async (query) => [
        (await query<{ n: number }>(`SELECT count(*)::int AS n FROM hosts h WHERE ${where}`, general.values))[0]!.n,
        (await query<{ n: number }>(recordSql, record.values))[0]!.n,
      ]);
      expect(b, what).toBe(a);
    };
    const check = async (q: string): Promise<void> => {
      const validate = await sys.http({ method: 'POST', url: '/api/v1/search/validate', payload: { query: q }, token });
      const count = await sys.http({ method: 'GET', url: `/api/v1/search/count?q=${enc(q)}`, token });
      const search = await sys.http({ method: 'GET', url: `/api/v1/search?q=${enc(q)}&per_page=5`, token });
      const what = `${JSON.stringify(q)}: validate ${validate.statusCode} ${validate.body.slice(0, 200)} / count ${count.statusCode} ${count.body.slice(0, 200)} / search ${search.statusCode}`;
      for (const res of [validate, count, search]) expect(res.statusCode, what).toBeLessThan(500);
      if (q.includes('\u0000')) return;
      expect(validate.statusCode, what).toBe(200);
      const verdict = validate.json().data as { valid: boolean; error: string };
      expect(verdict.error, what).toBe(pqlError(q) ?? '');
      if (verdict.valid) {
        valid++;
        expect(count.statusCode, what).toBe(200);
        expect(search.statusCode, what).toBe(200);
        expect(search.json().meta.total, what).toBe(count.json().data.count);
        await sameRecordCount(q, what);
      } else {
        expect(count.statusCode, what).toBe(400);
        expect(count.json().error.message, what).toBe(verdict.error);
        expect(search.statusCode, what).toBe(400);
      }
    };
    for (let i = 0; i < queries.length; i += 8) await Promise.all(queries.slice(i, i + 8).map(check));
    expect(valid).toBeGreaterThan(HTTP_QUERIES / 5);
    expect(recordCounts).toBeGreaterThan(20);
  }, 600_000);
});
