import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIELDS, type FieldDef } from '../../actors/fleet/search/fields.ts';
import { parsePql, pqlError } from '../../actors/fleet/search/parser.ts';
import { compileWhere, Params, recordCountSql } from '../../actors/fleet/search/compile.ts';
import { readOnlySearch } from '../../actors/fleet/search/run.ts';
import { PqlError } from '../../actors/fleet/search/lexer.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { startAdminSystem, userWith } from '../identity/admin-support.ts';
import { FLEET_A, insertFleet } from './search-fixtures.ts';
import { seededRandom } from '../../platform/seeded-random.ts';

/**
 * Thousands of random and mutated queries: the parser answers every one with a tree or a PqlError, and validate, count
 * and search over HTTP answer 200 or 400 — never a 5xx — and agree with each other.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20260110);
const HTTP_QUERIES = Number(process.env.FUZZ_QUERIES ?? 3000);

const STRING_BITS = [
  'a',
  'web-',
  '*',
  '\\*',
  '%',
  '_',
  '\\\\',
  '\\"',
  "'",
  ' ',
  'é',
  '😀',
  '\\n',
  '\\u00e9',
  '${x}',
  ';--',
  'DROP TABLE hosts',
  '1.2.3',
  '1:2.0-1~rc',
  '2026-01-10T10:00:00Z',
  '\\t',
  '[',
  ')',
];
const CHAOS = [
  '(',
  ')',
  '[',
  ']',
  ',',
  '"',
  '\\',
  '*',
  '=',
  '!',
  '~',
  '<',
  '>',
  '.',
  '-',
  ' ',
  'AND',
  'OR',
  'NOT',
  'IN',
  'EXISTS',
  'x',
  '9',
  "'",
  '%',
  '_',
  'é',
  '😀',
  '\u0000',
  '\u0001',
  '\t',
  '\n',
  '$1',
  '?',
  ':',
  'host.',
  'tag.',
  'package[',
];

function generator(random: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const str = (): string => `"${Array.from({ length: Math.floor(random() * 4) }, () => pick(STRING_BITS)).join('')}"`;
  const num = (): string =>
    pick(['0', '4', '-1', '16GiB', '1.5KB', '99999999999999999999999999', '3.14', '007', '1e9', '12abc']);
  const value = (f: FieldDef): string => {
    const r = random();
    if (r < 0.1) return pick([str(), num(), 'true', 'false', 'nope']);
    switch (f.type) {
      case 'number':
        return num();
      case 'boolean':
        return pick(['true', 'FALSE']);
      case 'datetime':
        return pick([
          '"2026-01-10T10:00:00Z"',
          '"2026-01-10"',
          '"2026-02-30"',
          '"2026-01-10T10:00:00+05:30"',
          '"soon"',
        ]);
      case 'version':
        return pick(['"1.4"', '"1:3.0.13-0ubuntu3.1"', '"~"', '""', '"3.0.2*"', str()]);
      case 'string':
        return str();
    }
  };
  const fieldName = (f: FieldDef, inRecord: boolean): string => {
    if (f.name === '*')
      return random() < 0.3
        ? `${f.prefix}."${pick(['a b', 'region', 'x"y'.replace('"', '\\"'), ''])}"`
        : `${f.prefix}.${pick(['env', 'region', 'app.kubernetes.io/name', 'team', 'role'])}`;
    return inRecord && random() < 0.6 ? f.name : `${f.prefix}.${f.name}`;
  };
  const condition = (depth: number, record?: string): string => {
    const r = random();
    if (depth < 4 && r < 0.15) return `(${expr(depth + 1, record)})`;
    if (depth < 4 && r < 0.25) return `NOT ${condition(depth + 1, record)}`;
    if (!record && depth < 3 && r < 0.35)
      return `${pick(['service', 'container', 'package'])}[${expr(depth + 1, pick(['service', 'container', 'package']))}]`;
    const candidates = record ? FIELDS.filter((f) => f.prefix === record) : FIELDS;
    const f = pick(candidates);
    // Mostly operators the field takes, sometimes any.
    const op =
      random() < 0.85
        ? pick(f.operators)
        : pick(['=', '!=', '~', '>', '<', '>=', '<=', 'IN', 'NOT IN', 'EXISTS'] as const);
    const name = fieldName(f, record !== undefined);
    if (op === 'EXISTS') return `${name} EXISTS`;
    if (op === 'IN' || op === 'NOT IN')
      return `${name} ${op} (${Array.from({ length: 1 + Math.floor(random() * 3) }, () => value(f)).join(', ')})`;
    return `${name} ${op} ${op === '~' ? str() : value(f)}`;
  };
  const expr = (depth: number, record?: string): string => {
    const n = 1 + Math.floor(random() * (depth === 0 ? 4 : 2));
    return Array.from({ length: n }, () => condition(depth, record)).reduce(
      (acc, c) => `${acc} ${pick(['AND', 'OR', 'and', 'or'])} ${c}`,
    );
  };
  const mutate = (q: string): string => {
    const chars = Array.from(q);
    const edits = 1 + Math.floor(random() * 3);
    for (let i = 0; i < edits; i++) {
      const at = Math.floor(random() * (chars.length + 1));
      const kind = random();
      if (kind < 0.35 && chars.length > 0) chars.splice(at, 1);
      else if (kind < 0.7) chars.splice(at, 0, pick(CHAOS));
      else if (kind < 0.85) chars.length = Math.min(chars.length, at);
      else chars.splice(at, 0, ...chars.slice(0, Math.floor(random() * chars.length)));
    }
    return chars.join('');
  };
  const garbage = (): string =>
    Array.from({ length: Math.floor(random() * 30) }, () => pick(CHAOS)).join(random() < 0.5 ? '' : ' ');
  return (): string => {
    const r = random();
    const q = r < 0.45 ? expr(0) : r < 0.9 ? mutate(expr(0)) : garbage();
    return Array.from(q).slice(0, 1200).join('');
  };
}

describe('fuzz: the parser', () => {
  it('answers 50,000 random and mutated queries with a tree or a PqlError, and every tree compiles', () => {
    const next = generator(seededRandom(SEED + 1));
    let valid = 0;
    for (let i = 0; i < 50_000; i++) {
      const q = next();
      try {
        const tree = parsePql(q);
        valid++;
        const p = new Params();
        const sql = compileWhere(tree, p);
        // Placeholders are numbered 1..n, each value bound once.
        const used = new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
        expect(used.size, q).toBe(p.values.length);
      } catch (err) {
        if (!(err instanceof PqlError)) throw new Error(`query ${JSON.stringify(q)} threw ${String(err)}`);
        expect(err.message, q).toMatch(/at position \d+|the query is (empty|longer)/);
      }
    }
    // The generator must exercise both sides.
    expect(valid).toBeGreaterThan(10_000);
    expect(valid).toBeLessThan(45_000);
  });
});

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
