import { FIELDS, type FieldDef } from '../../actors/fleet/search/fields.ts';

/**
 * Random and mutated PQL queries for the fuzz tests (search-fuzz.unit.test.ts: the parser; search-fuzz.test.ts: the
 * HTTP routes over a fleet): `generator(random)` answers a new query on each call, from the seeded `random`.
 */

/** The seed both fuzz tests start from (FUZZ_SEED overrides it). */
export const SEED = Number(process.env.FUZZ_SEED ?? 20260110);

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

export function generator(random: () => number) {
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
