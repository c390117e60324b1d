import { describe, expect, it } from 'vitest';
import { parsePql } from '../../actors/fleet/search/parser.ts';
import { compileWhere, Params } from '../../actors/fleet/search/compile.ts';
import { PqlError } from '../../actors/fleet/search/lexer.ts';
import { seededRandom } from '../../platform/seeded-random.ts';
import { generator, SEED } from './pql-fuzz.ts';

/**
 * Thousands of random and mutated queries: the parser answers every one with a tree or a PqlError, and every tree
 * compiles (over HTTP, against a fleet: search-fuzz.test.ts).
 */

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
