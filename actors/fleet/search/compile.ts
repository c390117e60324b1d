import { RECORD_TABLES, type FieldDef, type Op } from './fields.ts';
import type { GlobPart } from './lexer.ts';
import type { Expr, FieldRef, Value } from './parser.ts';

/**
 * PQL → one SQL condition on `hosts h`, with `$n` bind parameters: no value is ever written into the SQL text. Host
 * fields compare the host's column; label and tag equality is JSON containment (`@>`, served by the GIN indexes on
 * hosts.labels/tags); service, container and package conditions are EXISTS subqueries on their tables (any record
 * matches), which the planner turns into semi-joins (anti-joins under NOT).
 */

/** Bind parameters in the order of their `$n`. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** `*` → `%`, everything else literal: LIKE's own wildcards and its escape character are escaped. */
export const likePattern = (glob: GlobPart[]): string =>
  glob.map((part) => (part === null ? '%' : part.replace(/[\\%_]/g, (c) => `\\${c}`))).join('');

const CMP: Partial<Record<Op, string>> = { '=': '=', '!=': '<>', '>': '>', '<': '<', '>=': '>=', '<=': '<=' };

const text = (v: Value): string =>
  v.kind === 'string' || v.kind === 'number' || v.kind === 'datetime' ? v.text : String(v.value);
const glob = (v: Value): GlobPart[] => (v.kind === 'string' ? v.glob : [text(v)]);

/**
 * One comparison on a column expression `col` (of `alias`'s row). Never NULL: a nullable column's unknown value makes
 * the comparison false, so NOT of it is true (two-valued logic everywhere).
 */
function columnPredicate(col: string, alias: string, def: FieldDef, op: Op, values: Value[], p: Params): string {
  const pred = rawColumnPredicate(col, alias, def, op, values, p);
  return def.nullable && op !== 'EXISTS' ? `COALESCE(${pred}, false)` : pred;
}

function rawColumnPredicate(col: string, alias: string, def: FieldDef, op: Op, values: Value[], p: Params): string {
  if (op === 'EXISTS')
    return def.nullable
      ? `${col} IS NOT NULL`
      : def.type === 'string' || def.type === 'version'
        ? `${col} <> ''`
        : 'TRUE';
  if (def.lowerIndex) {
    // The same matches as ILIKE and =, written on the index expression: a prefix glob or a name reads a range of it.
    const lower = `lower(${col}) COLLATE "C"`;
    if (op === '~') return `${lower} LIKE lower(${p.add(likePattern(glob(values[0]!)))})`;
    if (op === '=') {
      const v = p.add(text(values[0]!));
      return `${lower} = lower(${v}) AND ${col} = ${v}`;
    }
    if (op === 'IN') {
      const vs = values.map((v) => p.add(text(v)));
      return `${lower} IN (${vs.map((v) => `lower(${v})`).join(', ')}) AND ${col} IN (${vs.join(', ')})`;
    }
  }
  if (op === '~') return `${col} ILIKE ${p.add(likePattern(glob(values[0]!)))}`;
  // The operand a value is compared with, and how a value is bound to compare with it.
  let operand = col;
  let bind = (v: Value): string => p.add(text(v));
  switch (def.type) {
    case 'number':
      bind = (v) => `${p.add(text(v))}::numeric`;
      break;
    case 'boolean':
      bind = (v) => `${p.add(text(v))}::boolean`;
      break;
    case 'datetime':
      bind = (v) => `${p.add(text(v))}::timestamptz`;
      break;
    case 'version':
      // Versions compare by their sort key (dpkg order, see Migration0009): stored for packages, computed for hosts.
      operand = def.versionKey ? `${alias}.${def.versionKey}` : `pql_version_key(${col})`;
      bind = (v) => `pql_version_key(${p.add(text(v))})`;
      break;
    case 'string':
      break;
  }
  const pred =
    op === 'IN' || op === 'NOT IN'
      ? `${operand} ${op} (${values.map(bind).join(', ')})`
      : `${operand} ${CMP[op]} ${bind(values[0]!)}`;
  // An empty version is an unreported one: it has no place in the version order and matches no comparison (stored
  // keys are NULL for it; the explicit test keeps the predicate two-valued under NOT and leaves the index usable).
  if (def.type !== 'version') return pred;
  return def.versionKey ? `${operand} IS NOT NULL AND ${pred}` : `${col} <> '' AND ${pred}`;
}

/** Labels and tags: a key holds one string value or is absent; every comparison but EXISTS needs the key present. */
function keyedPredicate(field: FieldRef, op: Op, values: Value[], p: Params): string {
  const col = `h.${field.def.column}`;
  const key = field.key!;
  const pair = (v: Value): string => `${col} @> ${p.add(`{${JSON.stringify(key)}:${JSON.stringify(text(v))}}`)}::jsonb`;
  switch (op) {
    case 'EXISTS':
      return `${col} ? ${p.add(key)}`;
    case '=':
      return pair(values[0]!);
    case 'IN':
      return values.length === 1 ? pair(values[0]!) : `(${values.map(pair).join(' OR ')})`;
    case '~':
      return `COALESCE(${col} ->> ${p.add(key)} ILIKE ${p.add(likePattern(glob(values[0]!)))}, false)`;
    case '!=':
      return `COALESCE(${col} ->> ${p.add(key)} <> ${p.add(text(values[0]!))}, false)`;
    case 'NOT IN':
      return `COALESCE(${col} ->> ${p.add(key)} NOT IN (${values.map((v) => p.add(text(v))).join(', ')}), false)`;
    default:
      throw new Error(`operator ${op} on ${field.label}`);
  }
}

function hostPredicate(field: FieldRef, op: Op, values: Value[], p: Params): string {
  const def = field.def;
  if (def.lookup) {
    // The slug of the host's environment or client: a small set of ids, matched against the host's foreign key.
    return `h.${def.lookup.via} IN (SELECT x.id FROM ${def.lookup.table} x WHERE ${columnPredicate(`x.${def.column}`, 'x', def, op, values, p)})`;
  }
  return columnPredicate(`h.${def.column}`, 'h', def, op, values, p);
}

const recordExists = (table: string, condition: string): string =>
  `EXISTS (SELECT 1 FROM ${table} r WHERE r.host_id = h.id AND ${condition})`;

/** A condition on one record (`r`) of a service/container/package table. */
function recordCondition(e: Expr, p: Params): string {
  switch (e.kind) {
    case 'and':
    case 'or':
      return `(${e.items.map((i) => recordCondition(i, p)).join(e.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `NOT ${recordCondition(e.item, p)}`;
    case 'cmp':
      return `(${columnPredicate(`r.${e.field.def.column}`, 'r', e.field.def, e.op, e.values, p)})`;
    case 'record':
      throw new Error('nested record condition');
  }
}

/** A positive record condition (`package[…]`, `service.name = "x"`): its table and its condition on `r`. */
function positiveRecord(e: Expr, p: Params): { table: string; condition: string } | null {
  if (e.kind === 'record') return { table: RECORD_TABLES[e.prefix], condition: recordCondition(e.cond, p) };
  if (
    e.kind === 'cmp' &&
    (e.field.def.prefix === 'service' || e.field.def.prefix === 'container' || e.field.def.prefix === 'package')
  )
    return {
      table: RECORD_TABLES[e.field.def.prefix],
      condition: `(${columnPredicate(`r.${e.field.def.column}`, 'r', e.field.def, e.op, e.values, p)})`,
    };
  return null;
}

/**
 * The count of a query that is one record condition (`package[name = "openssl" AND version < "3.0.13"]`,
 * `service.name = "nginx"`), or the NOT of one, as a statement of its own: the distinct hosts of the matching records,
 * read from the record table's index (joined to the caller's hosts when `clients` limits them), and for the NOT the
 * caller's hosts less those. Every record's host exists (foreign key, and one snapshot), so these are the numbers
 * `count(*) FROM hosts h WHERE [NOT] EXISTS (…)` gives; that semi-join hashed every matching record's host before
 * reading a host (three quarters of all hosts for the package comparison), and the anti-join read every host (the
 * timings of both: docs/benchmarks.md). null for any other shape.
 */
export function recordCountSql(e: Expr, p: Params, clients?: readonly string[]): string | null {
  const negated = e.kind === 'not';
  const positive = positiveRecord(negated ? e.item : e, p);
  if (!positive) return null;
  const scope = clients ? `h.client_id = ANY(${p.add(clients)}::uuid[])` : 'TRUE';
  const matching = clients
    ? `SELECT DISTINCT r.host_id FROM ${positive.table} r JOIN hosts h ON h.id = r.host_id WHERE ${scope} AND ${positive.condition}`
    : `SELECT DISTINCT r.host_id FROM ${positive.table} r WHERE ${positive.condition}`;
  const matches = `SELECT count(*) FROM (${matching}) m`;
  return negated
    ? `SELECT ((SELECT count(*) FROM hosts h WHERE ${scope}) - (${matches}))::int AS n`
    : `SELECT (${matches})::int AS n`;
}

/** The whole query as one condition on `hosts h`. */
export function compileWhere(e: Expr, p: Params): string {
  switch (e.kind) {
    case 'and':
    case 'or':
      return `(${e.items.map((i) => compileWhere(i, p)).join(e.kind === 'and' ? ' AND ' : ' OR ')})`;
    case 'not':
      return `NOT ${compileWhere(e.item, p)}`;
    case 'record':
      return recordExists(RECORD_TABLES[e.prefix], recordCondition(e.cond, p));
    case 'cmp': {
      const prefix = e.field.def.prefix;
      if (prefix === 'host') return `(${hostPredicate(e.field, e.op, e.values, p)})`;
      if (prefix === 'label' || prefix === 'tag') return `(${keyedPredicate(e.field, e.op, e.values, p)})`;
      return recordExists(
        RECORD_TABLES[prefix],
        `(${columnPredicate(`r.${e.field.def.column}`, 'r', e.field.def, e.op, e.values, p)})`,
      );
    }
  }
}
