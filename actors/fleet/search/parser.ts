import {
  FIELDS,
  findField,
  isRecordPrefix,
  PREFIXES,
  RECORD_PREFIXES,
  type FieldDef,
  type Op,
  type Prefix,
  type RecordPrefix,
} from './fields.ts';
import { PqlError, tokenize, type GlobPart, type Token } from './lexer.ts';

/**
 * PQL parser: hand-written recursive descent over the grammar in docs/api/search.md (EBNF). Every error names what was
 * expected and the 1-based position where it was expected (`expected a value after '=' at position 14`).
 */

export const MAX_QUERY_LENGTH = 4096;
export const MAX_DEPTH = 32;
export const MAX_CONDITIONS = 100;
export const MAX_IN_VALUES = 500;
/** Longest label or tag key a query may name (stored keys are at most 128 characters). */
const MAX_KEY_LENGTH = 1024;

export type Value =
  | { kind: 'string'; text: string; glob: GlobPart[] }
  /** An exact decimal (size units already applied), bound as numeric. */
  | { kind: 'number'; text: string }
  | { kind: 'boolean'; value: boolean }
  /** ISO 8601 UTC, bound as timestamptz. */
  | { kind: 'datetime'; text: string };

export interface FieldRef {
  def: FieldDef;
  /** The key of a label or tag field. */
  key?: string;
  /** As written (for messages). */
  label: string;
}

export type Expr =
  | { kind: 'and' | 'or'; items: Expr[] }
  | { kind: 'not'; item: Expr }
  /** `values`: none for EXISTS, one for a comparison, one or more for IN / NOT IN. */
  | { kind: 'cmp'; field: FieldRef; op: Op; values: Value[] }
  /** `service[...]`: one record of the host meets the whole inner condition. */
  | { kind: 'record'; prefix: RecordPrefix; cond: Expr };

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'EXISTS', 'TRUE', 'FALSE']);
const OPERATOR_WORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'EXISTS']);
const isKeyword = (t: Token, kw: string): boolean => t.kind === 'word' && t.text.toUpperCase() === kw;
const NUMBER = /^-?(\d+)(?:\.(\d+))?([A-Za-z]*)$/;
const UNITS: Record<string, bigint> = {
  B: 1n,
  KB: 1000n,
  MB: 1000n ** 2n,
  GB: 1000n ** 3n,
  TB: 1000n ** 4n,
  KIB: 1024n,
  MIB: 1024n ** 2n,
  GIB: 1024n ** 3n,
  TIB: 1024n ** 4n,
};
const DATE_TIME = /^(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?)(Z|[+-]\d\d:\d\d)?)?$/i;

const clip = (s: string): string => (Array.from(s).length > 24 ? `${Array.from(s).slice(0, 24).join('')}…` : s);

/** How a token is named in a message. */
function show(t: Token): string {
  switch (t.kind) {
    case 'eof':
      return 'the end of the query';
    case 'string':
      return `'${clip(t.raw)}'`;
    default:
      return `'${clip(t.text)}'`;
  }
}

class Parser {
  private i = 0;
  private conditions = 0;

  private readonly tokens: Token[];
  constructor(tokens: Token[]) {
    this.tokens = tokens;
  }

  private get t(): Token {
    return this.tokens[this.i]!;
  }
  /** The current token, read afresh (TypeScript would keep a narrowing of `this.t` across calls). */
  private peek(): Token {
    return this.tokens[this.i]!;
  }
  private next(): Token {
    const t = this.tokens[this.i]!;
    if (t.kind !== 'eof') this.i++;
    return t;
  }

  /** `expected X after 'prev' at position N` (or without `after` at the start), N being where the current token is. */
  private expected(what: string, at: Token = this.t): PqlError {
    const before = this.tokens[this.tokens.indexOf(at) - 1];
    return new PqlError(`expected ${what}${before ? ` after ${show(before)}` : ''} at position ${at.pos}`);
  }

  private isPunct(text: string): boolean {
    return this.t.kind === 'punct' && this.t.text === text;
  }

  parseQuery(): Expr {
    if (this.t.kind === 'eof') throw new PqlError('the query is empty');
    const e = this.orExpr(null, 0);
    if (this.peek().kind !== 'eof') {
      if (this.isPunct(')')) throw new PqlError(`unmatched ')' at position ${this.t.pos}`);
      throw this.expected('AND, OR or the end of the query');
    }
    return e;
  }

  /** `scope`: null at host level, the record prefix inside `prefix[...]`. */
  private orExpr(scope: RecordPrefix | null, depth: number): Expr {
    const items = [this.andExpr(scope, depth)];
    while (isKeyword(this.t, 'OR')) {
      this.next();
      items.push(this.andExpr(scope, depth));
    }
    return items.length === 1 ? items[0]! : { kind: 'or', items };
  }

  private andExpr(scope: RecordPrefix | null, depth: number): Expr {
    const items = [this.unary(scope, depth)];
    while (isKeyword(this.t, 'AND')) {
      this.next();
      items.push(this.unary(scope, depth));
    }
    return items.length === 1 ? items[0]! : { kind: 'and', items };
  }

  private deeper(depth: number, at: Token): number {
    if (depth + 1 > MAX_DEPTH)
      throw new PqlError(
        `the query nests more than ${MAX_DEPTH} levels deep (parentheses, NOT, [...]) at position ${at.pos}`,
      );
    return depth + 1;
  }

  private unary(scope: RecordPrefix | null, depth: number): Expr {
    if (isKeyword(this.t, 'NOT')) {
      const not = this.next();
      return { kind: 'not', item: this.unary(scope, this.deeper(depth, not)) };
    }
    if (this.isPunct('(')) {
      const open = this.next();
      const inner = this.orExpr(scope, this.deeper(depth, open));
      if (!this.isPunct(')')) throw this.expected(`AND, OR or ')'`);
      this.next();
      return inner;
    }
    return this.condition(scope, depth);
  }

  private condition(scope: RecordPrefix | null, depth: number): Expr {
    const t = this.t;
    if (t.kind !== 'word' || KEYWORDS.has(t.text.toUpperCase())) throw this.expected('a condition');
    if (++this.conditions > MAX_CONDITIONS)
      throw new PqlError(`the query has more than ${MAX_CONDITIONS} conditions at position ${t.pos}`);
    this.next();
    if (scope === null && !t.text.includes('.') && isRecordPrefix(t.text) && this.isPunct('['))
      return this.recordCondition(t.text, depth);
    const field = scope === null ? this.hostLevelField(t) : this.recordField(t, scope);
    return this.comparison(field);
  }

  /** `service[ ... ]`: the inner condition, on the fields of that prefix, holds for one and the same record. */
  private recordCondition(prefix: RecordPrefix, depth: number): Expr {
    const open = this.next();
    const cond = this.orExpr(prefix, this.deeper(depth, open));
    if (!this.isPunct(']')) throw this.expected(`AND, OR or ']'`);
    this.next();
    return { kind: 'record', prefix, cond };
  }

  private hostLevelField(t: Extract<Token, { kind: 'word' }>): FieldRef {
    const dot = t.text.indexOf('.');
    const prefix = dot < 0 ? t.text : t.text.slice(0, dot);
    if (!(PREFIXES as readonly string[]).includes(prefix)) {
      if (dot < 0)
        throw new PqlError(
          `unknown field '${clip(t.text)}' at position ${t.pos}; fields are written prefix.name (host., label., tag., service., container., package.)`,
        );
      throw new PqlError(
        `unknown field prefix '${clip(prefix)}' at position ${t.pos}; expected host, label, tag, service, container or package`,
      );
    }
    if (dot < 0) {
      if (this.isPunct('['))
        throw new PqlError(
          `only ${RECORD_PREFIXES.join(', ')} take a [...] condition, not '${prefix}', at position ${this.t.pos}`,
        );
      throw new PqlError(`expected '.' and a field name after '${prefix}' at position ${t.end}`);
    }
    const p = prefix as Prefix;
    const rest = t.text.slice(dot + 1);
    if (p === 'label' || p === 'tag') {
      let key = rest;
      // label."any key": a quoted key right after the dot.
      if (key === '' && this.t.kind === 'string' && this.t.pos === t.end)
        key = (this.next() as Extract<Token, { kind: 'string' }>).value;
      if (key === '') throw new PqlError(`expected a ${p} name after '${p}.' at position ${t.end}`);
      if (key.length > MAX_KEY_LENGTH)
        throw new PqlError(`a ${p} name is at most ${MAX_KEY_LENGTH} characters, at position ${t.pos}`);
      return { def: findField(p, '*')!, key, label: `${p}.${key}` };
    }
    if (rest === '') throw new PqlError(`expected a field name after '${p}.' at position ${t.end}`);
    const def = findField(p, rest);
    if (!def) throw new PqlError(`unknown field '${clip(t.text)}' at position ${t.pos}`);
    return { def, label: `${p}.${rest}` };
  }

  /** Inside `package[...]`: `version` or `package.version`. */
  private recordField(t: Extract<Token, { kind: 'word' }>, scope: RecordPrefix): FieldRef {
    const name = t.text.startsWith(`${scope}.`) ? t.text.slice(scope.length + 1) : t.text;
    const def = name.includes('.') ? undefined : findField(scope, name);
    if (!def) {
      const names = FIELDS.filter((f) => f.prefix === scope).map((f) => f.name);
      throw new PqlError(
        `unknown ${scope} field '${clip(t.text)}' at position ${t.pos}; inside ${scope}[...] the fields are ${names.join(', ')}`,
      );
    }
    return { def, label: `${scope}.${name}` };
  }

  private comparison(field: FieldRef): Expr {
    const t = this.t;
    let op: Op;
    if (t.kind === 'op') op = t.text;
    else if (isKeyword(t, 'IN')) op = 'IN';
    else if (isKeyword(t, 'EXISTS')) op = 'EXISTS';
    else if (isKeyword(t, 'NOT')) {
      const after = this.tokens[this.i + 1]!;
      if (!isKeyword(after, 'IN')) throw this.expected(`IN`, after);
      op = 'NOT IN';
    } else throw this.expected('an operator (=, !=, ~, >, <, >=, <=, IN, NOT IN or EXISTS)');
    if (!field.def.operators.includes(op)) {
      throw new PqlError(
        `operator ${op} does not apply to ${field.label} (a ${field.def.type} field; it takes ${field.def.operators.join(', ')}) at position ${t.pos}`,
      );
    }
    this.next();
    if (op === 'NOT IN') this.next();
    if (op === 'EXISTS') return { kind: 'cmp', field, op, values: [] };
    if (op === 'IN' || op === 'NOT IN') return { kind: 'cmp', field, op, values: this.valueList(field) };
    return { kind: 'cmp', field, op, values: [this.value(field, op)] };
  }

  private valueList(field: FieldRef): Value[] {
    if (!this.isPunct('(')) throw this.expected(`'('`);
    this.next();
    const values = [this.value(field, 'IN')];
    while (this.isPunct(',')) {
      this.next();
      if (values.length >= MAX_IN_VALUES)
        throw new PqlError(`an IN list takes at most ${MAX_IN_VALUES} values, at position ${this.t.pos}`);
      values.push(this.value(field, 'IN'));
    }
    if (!this.isPunct(')')) throw this.expected(`',' or ')'`);
    this.next();
    return values;
  }

  /** One value, checked against the field's type. */
  private value(field: FieldRef, op: Op): Value {
    const t = this.t;
    // A bare word is taken as an attempted value (and gets the typed message), but not a keyword such as AND.
    const isValue =
      t.kind === 'string' || t.kind === 'number' || (t.kind === 'word' && !OPERATOR_WORDS.has(t.text.toUpperCase()));
    if (!isValue) throw this.expected('a value');
    const type = op === '~' ? 'string' : field.def.type;
    const wrong = (what: string): PqlError => this.expected(`${what} for ${field.label}`);
    switch (type) {
      case 'string':
        if (t.kind !== 'string') throw wrong(op === '~' ? 'a quoted glob pattern' : 'a quoted string');
        this.next();
        return { kind: 'string', text: t.value, glob: t.glob };
      case 'version':
        if (t.kind !== 'string') throw wrong('a quoted version');
        this.next();
        return { kind: 'string', text: t.value, glob: t.glob };
      case 'number':
        if (t.kind !== 'number') throw wrong('a number');
        this.next();
        return { kind: 'number', text: numberValue(t, field) };
      case 'boolean':
        if (!isKeyword(t, 'TRUE') && !isKeyword(t, 'FALSE')) throw wrong('true or false');
        this.next();
        return { kind: 'boolean', value: isKeyword(t, 'TRUE') };
      case 'datetime': {
        if (t.kind !== 'string') throw wrong('a quoted date-time such as "2026-01-31T12:00:00Z"');
        const iso = dateTimeValue(t.value);
        if (iso === undefined)
          throw new PqlError(
            `invalid date-time ${clip(t.raw)} for ${field.label} at position ${t.pos}; expected RFC 3339 such as "2026-01-31T12:00:00Z"`,
          );
        this.next();
        return { kind: 'datetime', text: iso };
      }
    }
  }
}

/** An exact decimal string; a size unit (KB, MiB, GiB...) is allowed on byte fields only. */
function numberValue(t: Extract<Token, { kind: 'number' }>, field: FieldRef): string {
  const m = NUMBER.exec(t.text);
  if (!m || t.text.replace(/^-/, '').length > 40)
    throw new PqlError(`invalid number '${clip(t.text)}' at position ${t.pos}`);
  const [, int, frac = '', unitText] = m;
  const negative = t.text.startsWith('-');
  if (!unitText) return `${negative ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
  const unit = UNITS[unitText.toUpperCase()];
  if (unit === undefined)
    throw new PqlError(
      `invalid number '${clip(t.text)}' at position ${t.pos}; size units are B, KB, MB, GB, TB, KiB, MiB, GiB, TiB`,
    );
  if (!field.def.bytes)
    throw new PqlError(
      `a size unit is only allowed on byte fields such as host.memory_total_bytes, not on ${field.label}, at position ${t.pos}`,
    );
  // int.frac × unit, exactly: the scaled integer divided by 10^digits of the fraction.
  const scale = 10n ** BigInt(frac.length);
  const scaled = BigInt(int! + frac) * unit;
  const whole = scaled / scale;
  const rest = scaled % scale;
  const fraction = rest === 0n ? '' : `.${rest.toString().padStart(frac.length, '0').replace(/0+$/, '')}`;
  return `${negative ? '-' : ''}${whole}${fraction}`;
}

/** RFC 3339 (or a plain date, midnight UTC) as ISO 8601 UTC; undefined when it is no real date-time. */
export function dateTimeValue(text: string): string | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, date, time, zone] = m;
  const normalized = `${date}T${time ? (time.length === 5 ? `${time}:00` : time) : '00:00:00'}${zone ? zone.toUpperCase() : 'Z'}`;
  const ms = Date.parse(normalized);
  if (Number.isNaN(ms)) return undefined;
  // Date.parse rolls impossible days over (Feb 30 → Mar 2): the date part must survive the round trip.
  const local = new Date(ms + (zone && zone.toUpperCase() !== 'Z' ? offsetMs(zone) : 0)).toISOString().slice(0, 10);
  if (local !== date) return undefined;
  return new Date(ms).toISOString();
}

const offsetMs = (zone: string): number =>
  (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60_000;

/** Parses a PQL query; throws PqlError with the position and what was expected. */
export function parsePql(query: string): Expr {
  if (Array.from(query).length > MAX_QUERY_LENGTH)
    throw new PqlError(`the query is longer than ${MAX_QUERY_LENGTH} characters`);
  return new Parser(tokenize(query)).parseQuery();
}

/** The validation answer: null when the query is valid, otherwise the error text. */
export function pqlError(query: string): string | null {
  try {
    parsePql(query);
    return null;
  } catch (err) {
    if (err instanceof PqlError) return err.message;
    throw err;
  }
}
