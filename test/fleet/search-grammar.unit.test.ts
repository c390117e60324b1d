import { describe, expect, it } from 'vitest';
import { compileWhere, likePattern, Params } from '../../actors/fleet/search/compile.ts';
import { FIELDS, type FieldDef, type Op } from '../../actors/fleet/search/fields.ts';
import { tokenize } from '../../actors/fleet/search/lexer.ts';
import {
  MAX_CONDITIONS,
  MAX_DEPTH,
  MAX_IN_VALUES,
  MAX_QUERY_LENGTH,
  parsePql,
  pqlError,
  type Expr,
} from '../../actors/fleet/search/parser.ts';

/** The PQL grammar on its own (no servers): what parses into what, what is refused and where. */

const ALL_OPS: Op[] = ['=', '!=', '~', '>', '<', '>=', '<=', 'IN', 'NOT IN', 'EXISTS'];
const SAMPLE: Record<FieldDef['type'], string> = {
  string: '"a"',
  number: '4',
  version: '"1.2.3"',
  boolean: 'true',
  datetime: '"2026-01-31T12:00:00Z"',
};
const nameOf = (f: FieldDef): string => (f.name === '*' ? `${f.prefix}.some_key` : `${f.prefix}.${f.name}`);
const queryFor = (f: FieldDef, op: Op, field = nameOf(f)): string => {
  const v = op === '~' ? '"a*"' : SAMPLE[f.type];
  return op === 'EXISTS'
    ? `${field} EXISTS`
    : op === 'IN' || op === 'NOT IN'
      ? `${field} ${op} (${v}, ${v})`
      : `${field} ${op} ${v}`;
};

/** A compact picture of a tree: (and ...), (or ...), (not ...), field op values, prefix[...]. */
function shape(e: Expr): string {
  switch (e.kind) {
    case 'and':
    case 'or':
      return `(${e.kind} ${e.items.map(shape).join(' ')})`;
    case 'not':
      return `(not ${shape(e.item)})`;
    case 'record':
      return `${e.prefix}[${shape(e.cond)}]`;
    case 'cmp':
      return `${e.field.label} ${e.op}${e.values.map((v) => ` ${v.kind === 'boolean' ? v.value : v.text}`).join(',')}`;
  }
}

describe('every operator on every prefix', () => {
  for (const f of FIELDS) {
    for (const op of ALL_OPS) {
      const q = queryFor(f, op);
      if (f.operators.includes(op)) {
        it(`accepts ${q}`, () => {
          const e = parsePql(q);
          expect(e.kind).toBe('cmp');
          if (e.kind !== 'cmp') return;
          expect(e.field.def).toBe(f);
          expect(e.op).toBe(op);
          expect(e.values).toHaveLength(op === 'EXISTS' ? 0 : op.endsWith('IN') ? 2 : 1);
          if (f.prefix === 'label' || f.prefix === 'tag') expect(e.field.key).toBe('some_key');
          // It compiles, and to the form its prefix promises.
          const sql = compileWhere(e, new Params());
          if (f.prefix === 'service' || f.prefix === 'container' || f.prefix === 'package')
            expect(sql).toMatch(
              /^EXISTS \(SELECT 1 FROM host_(services|containers|packages) r WHERE r\.host_id = h\.id AND /,
            );
          if ((f.prefix === 'label' || f.prefix === 'tag') && (op === '=' || op === 'IN'))
            expect(sql).toContain(' @> $1::jsonb');
          if ((f.prefix === 'label' || f.prefix === 'tag') && op === 'EXISTS') expect(sql).toContain(' ? $1');
          if (op === '~')
            expect(sql).toMatch(
              f.name === 'hostname' ? /lower\(h\.hostname\) COLLATE "C" LIKE lower\(\$1\)/ : / ILIKE \$\d/,
            );
        });
      } else {
        it(`refuses ${q}`, () => {
          const at = q.indexOf(op.split(' ')[0]!, nameOf(f).length) + 1;
          expect(pqlError(q)).toBe(
            `operator ${op} does not apply to ${nameOf(f)} (a ${f.type} field; it takes ${f.operators.join(', ')}) at position ${at}`,
          );
        });
      }
    }
  }

  it('takes the same fields inside a record condition, with or without their prefix', () => {
    for (const f of FIELDS.filter(
      (x) => x.prefix === 'service' || x.prefix === 'container' || x.prefix === 'package',
    )) {
      for (const op of f.operators) {
        for (const written of [f.name, `${f.prefix}.${f.name}`]) {
          const q = `${f.prefix}[${queryFor(f, op, written)}]`;
          const e = parsePql(q);
          expect(e.kind, q).toBe('record');
        }
      }
    }
  });
});

describe('precedence and parentheses', () => {
  const a = 'host.os = "a"';
  const b = 'tag.t = "b"';
  const c = 'label.l = "c"';
  const table: [string, string][] = [
    [`${a} OR ${b} AND ${c}`, '(or host.os = a (and tag.t = b label.l = c))'],
    [`${a} AND ${b} OR ${c}`, '(or (and host.os = a tag.t = b) label.l = c)'],
    [`(${a} OR ${b}) AND ${c}`, '(and (or host.os = a tag.t = b) label.l = c)'],
    [`${a} AND (${b} OR ${c})`, '(and host.os = a (or tag.t = b label.l = c))'],
    [`NOT ${a} AND ${b}`, '(and (not host.os = a) tag.t = b)'],
    [`NOT ${a} OR ${b}`, '(or (not host.os = a) tag.t = b)'],
    [`NOT (${a} OR ${b})`, '(not (or host.os = a tag.t = b))'],
    [`NOT NOT ${a}`, '(not (not host.os = a))'],
    [`${a} AND ${b} AND ${c}`, '(and host.os = a tag.t = b label.l = c)'],
    [`${a} OR ${b} OR ${c}`, '(or host.os = a tag.t = b label.l = c)'],
    [`((((${a}))))`, 'host.os = a'],
    [`${a} and not ${b} or ${c}`, '(or (and host.os = a (not tag.t = b)) label.l = c)'],
    [`host.os="a"AND(tag.t="b"OR label.l="c")`, '(and host.os = a (or tag.t = b label.l = c))'],
    [
      `service[name = "x" OR NOT active_state = "y" AND enabled = true]`,
      'service[(or service.name = x (and (not service.active_state = y) service.enabled = true))]',
    ],
    [
      `NOT package[name = "a" AND (version < "2" OR version > "3")] AND ${a}`,
      '(and (not package[(and package.name = a (or package.version < 2 package.version > 3))]) host.os = a)',
    ],
    [`host.cpu_cores IN (1, 2,3) AND host.os NOT IN ("x")`, '(and host.cpu_cores IN 1, 2, 3 host.os NOT IN x)'],
    [`host.os not in ("x") and tag.t exists`, '(and host.os NOT IN x tag.t EXISTS)'],
  ];
  it.each(table)('%s', (q, expected) => expect(shape(parsePql(q))).toBe(expected));

  it('compiles precedence into explicit parentheses', () => {
    const sql = compileWhere(parsePql(`NOT ${a} AND ${b} OR ${c}`), new Params());
    expect(sql).toBe('((NOT (h.os = $1) AND (h.tags @> $2::jsonb)) OR (h.labels @> $3::jsonb))');
  });
});

describe('quoting and escapes', () => {
  const value = (q: string): { text: string; glob?: unknown } => {
    const e = parsePql(q);
    if (e.kind !== 'cmp') throw new Error('not a comparison');
    const v = e.values[0]!;
    return v.kind === 'string'
      ? { text: v.text, glob: v.glob }
      : { text: v.kind === 'boolean' ? String(v.value) : v.text };
  };
  it.each([
    ['host.os = "plain"', 'plain'],
    ['host.os = "with \\"quotes\\""', 'with "quotes"'],
    ['host.os = "back\\\\slash"', 'back\\slash'],
    ['host.os = "tab\\there"', 'tab\there'],
    ['host.os = "new\\nline\\r"', 'new\nline\r'],
    ['host.os = "sl\\/ash"', 'sl/ash'],
    ['host.os = "\\u00e9t\\u00E9"', 'été'],
    ['host.os = "a\\*b"', 'a*b'],
    ['host.os = ""', ''],
    ['host.os = "ünïcødé 😀"', 'ünïcødé 😀'],
    ['host.os = "a, (b) AND c"', 'a, (b) AND c'],
  ])('%s', (q, text) => expect(value(q).text).toBe(text));

  it('keeps * as a wildcard in globs unless escaped, and escapes LIKE characters', () => {
    expect(value('host.os ~ "web-*"').glob).toEqual(['web-', null]);
    expect(value('host.os ~ "*a*b"').glob).toEqual([null, 'a', null, 'b']);
    expect(value('host.os ~ "a\\*b"').glob).toEqual(['a*b']);
    expect(likePattern(['50%_off\\', null])).toBe('50\\%\\_off\\\\%');
    expect(likePattern([null, 'a*b', null])).toBe('%a*b%');
  });

  it('reads quoted label and tag names, and unquoted ones with . / - _', () => {
    const key = (q: string): string | undefined => {
      const e = parsePql(q);
      return e.kind === 'cmp' ? e.field.key : undefined;
    };
    expect(key('label."app name" = "x"')).toBe('app name');
    expect(key('label."a\\"b" EXISTS')).toBe('a"b');
    expect(key('tag.app.kubernetes.io/part-of = "x"')).toBe('app.kubernetes.io/part-of');
    expect(key('tag.under_score-1 EXISTS')).toBe('under_score-1');
    // A space between the dot and the quote makes them two tokens.
    expect(pqlError('label. "x" = "y"')).toBe(`expected a label name after 'label.' at position 7`);
  });

  it('reads numbers with size units exactly', () => {
    const n = (q: string): string => value(q).text;
    expect(n('host.memory_total_bytes = 16GiB')).toBe(String(16 * 1024 ** 3));
    expect(n('host.memory_total_bytes = 1.5kb')).toBe('1500');
    expect(n('host.memory_total_bytes = 0.5KiB')).toBe('512');
    expect(n('host.memory_total_bytes = 1.0001KB')).toBe('1000.1');
    expect(n('host.memory_total_bytes = 2TiB')).toBe('2199023255552');
    expect(n('host.cpu_cores = -3')).toBe('-3');
    expect(n('host.cpu_cores = 007')).toBe('007');
    expect(n('host.cpu_cores > 2.50')).toBe('2.50');
  });

  it('normalises date-times to UTC', () => {
    expect(value('host.last_seen_at > "2026-01-31T12:00:00+02:00"').text).toBe('2026-01-31T10:00:00.000Z');
    expect(value('host.last_seen_at > "2026-01-31"').text).toBe('2026-01-31T00:00:00.000Z');
    expect(value('host.last_seen_at > "2026-01-31t12:00z"').text).toBe('2026-01-31T12:00:00.000Z');
    expect(value('host.last_seen_at > "2024-02-29T23:59:59.999Z"').text).toBe('2024-02-29T23:59:59.999Z');
  });

  it('counts positions in characters, not bytes or UTF-16 units', () => {
    expect(tokenize('"😀😀" x').map((t) => t.pos)).toEqual([1, 6, 7]);
    expect(pqlError('host.os = "😀" AND ?')).toBe(`unexpected character '?' at position 19`);
  });
});

describe('malformed queries: the message and the exact position', () => {
  const table: [string, string][] = [
    ['host.os =', `expected a value after '=' at position 10`],
    ['host.os = ', `expected a value after '=' at position 11`],
    ['label.region = AND tag.x = "y"', `expected a value after '=' at position 16`],
    ['host.os', `expected an operator (=, !=, ~, >, <, >=, <=, IN, NOT IN or EXISTS) after 'host.os' at position 8`],
    [
      'host.os "linux"',
      `expected an operator (=, !=, ~, >, <, >=, <=, IN, NOT IN or EXISTS) after 'host.os' at position 9`,
    ],
    ['= "linux"', `expected a condition at position 1`],
    ['AND host.os = "x"', `expected a condition at position 1`],
    ['"x" = host.os', `expected a condition at position 1`],
    ['host.os = "x" AND', `expected a condition after 'AND' at position 18`],
    ['host.os = "x" OR OR host.arch = "y"', `expected a condition after 'OR' at position 18`],
    ['host.os = "x" host.arch = "y"', `expected AND, OR or the end of the query after '"x"' at position 15`],
    [
      'tag.env = "a" AND tag.env = "b" XOR tag.x = "c"',
      `expected AND, OR or the end of the query after '"b"' at position 33`,
    ],
    ['host.os = "x" ]', `expected AND, OR or the end of the query after '"x"' at position 15`],
    ['(host.os = "x"', `expected AND, OR or ')' after '"x"' at position 15`],
    ['host.os = "x")', `unmatched ')' at position 14`],
    ['()', `expected a condition after '(' at position 2`],
    ['NOT', `expected a condition after 'NOT' at position 4`],
    ['NOT NOT', `expected a condition after 'NOT' at position 8`],
    ['host.os = "x" AND (host.arch = "y" OR)', `expected a condition after 'OR' at position 38`],
    ['host.os IN', `expected '(' after 'IN' at position 11`],
    ['host.os IN "x"', `expected '(' after 'IN' at position 12`],
    ['host.os IN ("x"', `expected ',' or ')' after '"x"' at position 16`],
    ['host.os IN ("x" "y")', `expected ',' or ')' after '"x"' at position 17`],
    ['host.os IN ("x",)', `expected a value after ',' at position 17`],
    ['host.os IN ()', `expected a value after '(' at position 13`],
    ['host.os NOT "x"', `expected IN after 'NOT' at position 13`],
    ['host.os NOT EXISTS', `expected IN after 'NOT' at position 13`],
    ['host.os EXISTS "x"', `expected AND, OR or the end of the query after 'EXISTS' at position 16`],
    ['host.os == "x"', `expected a value after '=' at position 10`],
    ['host.os = "x" & host.arch = "y"', `unexpected character '&' at position 15`],
    ['host.os ! "x"', `unexpected character '!' at position 9`],
    [`host.os = 'x'`, `unexpected character "'" at position 11; strings are written in double quotes`],
    ['host.os = "unterminated', `unterminated string starting at position 11`],
    ['host.os = "x\\', `unterminated string starting at position 11`],
    ['host.os = "bad \\q escape"', `invalid escape '\\q' at position 16`],
    ['host.os = "\\u12"', `invalid escape '\\u12' at position 12; \\u takes four hex digits`],
    [
      'hosts.os = "x"',
      `unknown field prefix 'hosts' at position 1; expected host, label, tag, service, container or package`,
    ],
    [
      'os = "x"',
      `unknown field 'os' at position 1; fields are written prefix.name (host., label., tag., service., container., package.)`,
    ],
    ['host = "x"', `expected '.' and a field name after 'host' at position 5`],
    ['host. = "x"', `expected a field name after 'host.' at position 6`],
    ['host.nope = "x"', `unknown field 'host.nope' at position 1`],
    ['host.os = "a" AND service.nope = "x"', `unknown field 'service.nope' at position 19`],
    ['label. = "x"', `expected a label name after 'label.' at position 7`],
    ['label."" = "x"', `expected a label name after 'label.' at position 7`],
    ['tag.', `expected a tag name after 'tag.' at position 5`],
    ['service[]', `expected a condition after '[' at position 9`],
    ['service["x"]', `expected a condition after '[' at position 9`],
    ['service[name = "x"', `expected AND, OR or ']' after '"x"' at position 19`],
    ['service[name = "x")', `expected AND, OR or ']' after '"x"' at position 19`],
    ['host[os = "x"]', `only service, container, package take a [...] condition, not 'host', at position 5`],
    [
      'package[version < "1" AND service.name = "x"]',
      `unknown package field 'service.name' at position 27; inside package[...] the fields are name, version, manager, architecture`,
    ],
    [
      'package[package[name = "x"]]',
      `unknown package field 'package' at position 9; inside package[...] the fields are name, version, manager, architecture`,
    ],
    // types: a number field never takes a string, and so on
    ['host.cpu_cores = "4"', `expected a number for host.cpu_cores after '=' at position 18`],
    ['host.cpu_cores IN (4, "5")', `expected a number for host.cpu_cores after ',' at position 23`],
    ['host.cpu_cores > four', `expected a number for host.cpu_cores after '>' at position 18`],
    ['host.cpu_cores = 4.5.6', `invalid number '4.5.6' at position 18`],
    [
      'host.cpu_cores = 4GB',
      `a size unit is only allowed on byte fields such as host.memory_total_bytes, not on host.cpu_cores, at position 18`,
    ],
    [
      'host.memory_total_bytes > 4XB',
      `invalid number '4XB' at position 27; size units are B, KB, MB, GB, TB, KiB, MiB, GiB, TiB`,
    ],
    ['host.hostname = 5', `expected a quoted string for host.hostname after '=' at position 17`],
    ['host.hostname = true', `expected a quoted string for host.hostname after '=' at position 17`],
    ['host.hostname = web', `expected a quoted string for host.hostname after '=' at position 17`],
    ['tag.env ~ 5', `expected a quoted glob pattern for tag.env after '~' at position 11`],
    ['service.enabled = "yes"', `expected true or false for service.enabled after '=' at position 19`],
    ['service.enabled = 1', `expected true or false for service.enabled after '=' at position 19`],
    [
      'host.last_seen_at > 2026',
      `expected a quoted date-time such as "2026-01-31T12:00:00Z" for host.last_seen_at after '>' at position 21`,
    ],
    [
      'host.last_seen_at > "yesterday"',
      `invalid date-time "yesterday" for host.last_seen_at at position 21; expected RFC 3339 such as "2026-01-31T12:00:00Z"`,
    ],
    [
      'host.last_seen_at > "2026-02-30"',
      `invalid date-time "2026-02-30" for host.last_seen_at at position 21; expected RFC 3339 such as "2026-01-31T12:00:00Z"`,
    ],
    ['package.version > 1.2', `expected a quoted version for package.version after '>' at position 19`],
    ['host.os = "é" AND 😀', `unexpected character '😀' at position 19`],
    ['', 'the query is empty'],
    ['   ', 'the query is empty'],
  ];
  it.each(table)('%s', (q, message) => expect(pqlError(q)).toBe(message));

  it('bounds length, nesting, conditions and IN lists', () => {
    expect(pqlError(`host.os = "${'x'.repeat(MAX_QUERY_LENGTH)}"`)).toBe(
      `the query is longer than ${MAX_QUERY_LENGTH} characters`,
    );
    const deep = `${'('.repeat(MAX_DEPTH + 1)}host.os = "x"${')'.repeat(MAX_DEPTH + 1)}`;
    expect(pqlError(deep)).toBe(
      `the query nests more than ${MAX_DEPTH} levels deep (parentheses, NOT, [...]) at position ${MAX_DEPTH + 1}`,
    );
    expect(pqlError(`${'('.repeat(MAX_DEPTH)}host.os = "x"${')'.repeat(MAX_DEPTH)}`)).toBeNull();
    expect(pqlError(`${'NOT '.repeat(MAX_DEPTH + 1)}host.os = "x"`)).toContain('levels deep');
    // Deeper than any stack would allow: still an answer, not a crash.
    expect(pqlError('('.repeat(4000))).toContain('levels deep');
    const many = Array.from({ length: MAX_CONDITIONS + 1 }, (_, i) => `tag.t${i} EXISTS`).join(' OR ');
    expect(pqlError(many)).toMatch(
      new RegExp(`^the query has more than ${MAX_CONDITIONS} conditions at position \\d+$`),
    );
    expect(pqlError(Array.from({ length: MAX_CONDITIONS }, (_, i) => `tag.t${i} EXISTS`).join(' OR '))).toBeNull();
    const list = (n: number): string => `host.cpu_cores IN (${Array.from({ length: n }, (_, i) => i).join(', ')})`;
    expect(pqlError(list(MAX_IN_VALUES))).toBeNull();
    expect(pqlError(list(MAX_IN_VALUES + 1))).toMatch(
      new RegExp(`^an IN list takes at most ${MAX_IN_VALUES} values, at position \\d+$`),
    );
  });
});

describe('compilation', () => {
  const sql = (q: string): { sql: string; params: unknown[] } => {
    const p = new Params();
    return { sql: compileWhere(parsePql(q), p), params: p.values };
  };
  it.each([
    ['tag.env = "prod"', '(h.tags @> $1::jsonb)', ['{"env":"prod"}']],
    ['label.a IN ("x", "y")', '((h.labels @> $1::jsonb OR h.labels @> $2::jsonb))', ['{"a":"x"}', '{"a":"y"}']],
    ['label.a EXISTS', '(h.labels ? $1)', ['a']],
    ['label.a != "x"', '(COALESCE(h.labels ->> $1 <> $2, false))', ['a', 'x']],
    ['tag.__proto__ = "x"', '(h.tags @> $1::jsonb)', ['{"__proto__":"x"}']],
    ['host.hostname ~ "web-*"', '(lower(h.hostname) COLLATE "C" LIKE lower($1))', ['web-%']],
    ['host.hostname = "Web-01"', '(lower(h.hostname) COLLATE "C" = lower($1) AND h.hostname = $1)', ['Web-01']],
    [
      'host.hostname IN ("a", "B")',
      '(lower(h.hostname) COLLATE "C" IN (lower($1), lower($2)) AND h.hostname IN ($1, $2))',
      ['a', 'B'],
    ],
    ['host.hostname != "a"', '(h.hostname <> $1)', ['a']],
    ['host.os ~ "Lin*"', '(h.os ILIKE $1)', ['Lin%']],
    ['host.cpu_cores >= 4', '(h.cpu_cores >= $1::numeric)', ['4']],
    [
      'host.last_seen_at < "2026-01-01"',
      '(COALESCE(h.last_seen_at < $1::timestamptz, false))',
      ['2026-01-01T00:00:00.000Z'],
    ],
    [
      'host.agent_version > "1.2"',
      `(h.agent_version <> '' AND pql_version_key(h.agent_version) > pql_version_key($1))`,
      ['1.2'],
    ],
    [
      'host.environment = "prod"',
      '(h.environment_id IN (SELECT x.id FROM environments x WHERE x.slug = $1))',
      ['prod'],
    ],
    [
      'service.name = "nginx"',
      'EXISTS (SELECT 1 FROM host_services r WHERE r.host_id = h.id AND (r.name = $1))',
      ['nginx'],
    ],
    [
      'NOT service.name = "nginx"',
      'NOT EXISTS (SELECT 1 FROM host_services r WHERE r.host_id = h.id AND (r.name = $1))',
      ['nginx'],
    ],
    [
      'package[name = "openssl" AND version < "3"]',
      `EXISTS (SELECT 1 FROM host_packages r WHERE r.host_id = h.id AND ((r.name = $1) AND (r.version_key IS NOT NULL AND r.version_key < pql_version_key($2))))`,
      ['openssl', '3'],
    ],
    [
      'service.enabled = true',
      'EXISTS (SELECT 1 FROM host_services r WHERE r.host_id = h.id AND (COALESCE(r.enabled = $1::boolean, false)))',
      ['true'],
    ],
  ])('%s', (q, expected, params) => expect(sql(q)).toEqual({ sql: expected, params }));

  it('sends values as bind parameters, never in the SQL text', () => {
    const p = new Params();
    const sql = compileWhere(
      parsePql(`host.hostname = "x'; DROP TABLE hosts; --" AND tag.env IN ("a$1", "b") AND package[version < "9:9"]`),
      p,
    );
    expect(sql).not.toContain('DROP');
    expect(sql).not.toContain('a$1');
    expect(sql).not.toContain('9:9');
    expect(p.values).toEqual([`x'; DROP TABLE hosts; --`, '{"env":"a$1"}', '{"env":"b"}', '9:9']);
  });
});
