/**
 * A strict PromQL parser for the tenant query route (POST /metrics/query). It accepts the Prometheus query language
 * (selectors, range and subquery windows, offset and @, function calls, aggregations with by/without and a parameter,
 * binary operators with bool, on/ignoring and group_left/group_right, unary minus, comments) and nothing else: the
 * MetricsQL extensions VictoriaMetrics would also run (WITH templates, `or` inside braces, `keep_metric_names`,
 * `limit`, `if`/`default` operators, durations in expressions…) fail to parse, so the guard only ever judges a tree it
 * fully understands. The tree is printed again (promql-guard.ts) and that text, not the caller's, goes upstream.
 */

export type MatchOp = '=' | '!=' | '=~' | '!~';
export interface Matcher {
  label: string;
  op: MatchOp;
  value: string;
}
export type At = number | 'start' | 'end';

export type PromNode =
  | { kind: 'number'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'selector'; name?: string; matchers: Matcher[]; rangeMs?: number; offsetMs?: number; at?: At }
  | { kind: 'subquery'; expr: PromNode; rangeMs: number; stepMs?: number; offsetMs?: number; at?: At }
  | { kind: 'call'; func: string; args: PromNode[] }
  | {
      kind: 'aggregate';
      op: string;
      param?: PromNode;
      expr: PromNode;
      grouping?: { mode: 'by' | 'without'; labels: string[] };
    }
  | {
      kind: 'binary';
      op: string;
      lhs: PromNode;
      rhs: PromNode;
      bool: boolean;
      matching?: { mode: 'on' | 'ignoring'; labels: string[] };
      group?: { side: 'left' | 'right'; labels: string[] };
    }
  | { kind: 'unary'; op: '-' | '+'; expr: PromNode };

/** Thrown for text that is not (our subset of) PromQL; the message says where and why. */
export class PromQLSyntaxError extends Error {
  override name = 'PromQLSyntaxError';
}

export const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
]);
/** Aggregations whose first argument is a parameter (a number or, for count_values, a label name). */
const PARAMETRIC = new Set(['count_values', 'bottomk', 'topk', 'quantile']);

type TokKind = 'num' | 'dur' | 'str' | 'ident' | 'op' | 'punct' | 'eof';
interface Token {
  kind: TokKind;
  text: string;
  pos: number;
  /** num: the value; dur: milliseconds. */
  value?: number;
  /** str: the decoded value. */
  str?: string;
}

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
  y: 31_536_000_000,
};
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w|y))+/;
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/g;
const NUMBER = /^(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/;
const IDENT = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const OPERATORS = ['==', '!=', '>=', '<=', '=~', '!~', '+', '-', '*', '/', '%', '^', '>', '<', '='];

function lex(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  // Inside [...] a colon separates a subquery's window from its step; elsewhere it may start a metric name.
  let brackets = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    const rest = src.slice(i);
    if (/[0-9.]/.test(c)) {
      const dur = DURATION.exec(rest);
      if (dur && !/[a-zA-Z0-9_.]/.test(rest[dur[0].length] ?? '')) {
        let ms = 0;
        for (const m of dur[0].matchAll(DURATION_PART)) ms += Number(m[1]) * DURATION_UNITS[m[2]!]!;
        out.push({ kind: 'dur', text: dur[0], pos: i, value: Math.round(ms) });
        i += dur[0].length;
        continue;
      }
      const num = NUMBER.exec(rest);
      if (num && !/[a-zA-Z_:.]/.test(rest[num[0].length] ?? '')) {
        out.push({ kind: 'num', text: num[0], pos: i, value: Number(num[0]) });
        i += num[0].length;
        continue;
      }
      throw new PromQLSyntaxError(`unexpected ${JSON.stringify(rest.slice(0, 12))} at position ${i}`);
    }
    if (c === '"' || c === "'" || c === '`') {
      const { value, end } = readString(src, i);
      out.push({ kind: 'str', text: src.slice(i, end), pos: i, str: value });
      i = end;
      continue;
    }
    if (c === ':' && brackets > 0) {
      out.push({ kind: 'punct', text: c, pos: i });
      i++;
      continue;
    }
    const id = IDENT.exec(rest);
    if (id) {
      out.push({ kind: 'ident', text: id[0], pos: i });
      i += id[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => rest.startsWith(o));
    if (op) {
      out.push({ kind: 'op', text: op, pos: i });
      i += op.length;
      continue;
    }
    if ('(){}[],:@'.includes(c)) {
      if (c === '[') brackets++;
      if (c === ']') brackets = Math.max(0, brackets - 1);
      out.push({ kind: 'punct', text: c, pos: i });
      i++;
      continue;
    }
    throw new PromQLSyntaxError(`unexpected character ${JSON.stringify(c)} at position ${i}`);
  }
  out.push({ kind: 'eof', text: '', pos: src.length });
  return out;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '\\': '\\',
  '"': '"',
  "'": "'",
};

/** A quoted string as Go (and so PromQL) reads it: backslash escapes in "…" and '…', none in `…`. */
function readString(src: string, start: number): { value: string; end: number } {
  const quote = src[start]!;
  let i = start + 1;
  let value = '';
  while (i < src.length) {
    const c = src[i]!;
    if (c === quote) return { value, end: i + 1 };
    if (quote !== '`' && c === '\n') break;
    if (quote !== '`' && c === '\\') {
      const e = src[i + 1] ?? '';
      if (e in SIMPLE_ESCAPES) {
        value += SIMPLE_ESCAPES[e];
        i += 2;
        continue;
      }
      const hex = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
      if (hex > 0) {
        const digits = src.slice(i + 2, i + 2 + hex);
        if (!new RegExp(`^[0-9a-fA-F]{${hex}}$`).test(digits))
          throw new PromQLSyntaxError(`invalid escape \\${e} at position ${i}`);
        const code = Number.parseInt(digits, 16);
        if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
          throw new PromQLSyntaxError(`invalid code point in escape at position ${i}`);
        value += String.fromCodePoint(code);
        i += 2 + hex;
        continue;
      }
      const oct = /^[0-7]{3}/.exec(src.slice(i + 1));
      if (oct) {
        value += String.fromCharCode(Number.parseInt(oct[0], 8) & 0xff);
        i += 4;
        continue;
      }
      throw new PromQLSyntaxError(`unknown escape \\${e} at position ${i}`);
    }
    value += c;
    i++;
  }
  throw new PromQLSyntaxError(`unterminated string starting at position ${start}`);
}

/** Binary operator precedence, loosest first (Prometheus'). `^` is right-associative. */
const PRECEDENCE: Record<string, number> = {
  or: 1,
  and: 2,
  unless: 2,
  '==': 3,
  '!=': 3,
  '<=': 3,
  '<': 3,
  '>=': 3,
  '>': 3,
  '+': 4,
  '-': 4,
  '*': 5,
  '/': 5,
  '%': 5,
  atan2: 5,
  '^': 6,
};
const COMPARISONS = new Set(['==', '!=', '<=', '<', '>=', '>']);
const SET_OPERATORS = new Set(['and', 'or', 'unless']);
/** Nesting beyond this is refused (a recursive-descent parser must not be driven into a stack overflow). */
const MAX_DEPTH = 64;

class Parser {
  private i = 0;
  private depth = 0;
  private readonly toks: Token[];
  constructor(toks: Token[]) {
    this.toks = toks;
  }

  parse(): PromNode {
    const node = this.expr(0);
    const t = this.peek();
    if (t.kind !== 'eof') throw this.error(t, 'expected the end of the query');
    return node;
  }

  private peek(offset = 0): Token {
    return this.toks[Math.min(this.i + offset, this.toks.length - 1)]!;
  }
  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'eof') this.i++;
    return t;
  }
  private is(text: string, kind?: TokKind): boolean {
    const t = this.peek();
    return t.text === text && (kind === undefined || t.kind === kind) && t.kind !== 'str';
  }
  private expect(text: string): Token {
    const t = this.next();
    if (t.text !== text || t.kind === 'str') throw this.error(t, `expected ${JSON.stringify(text)}`);
    return t;
  }
  private error(t: Token, what: string): PromQLSyntaxError {
    const found = t.kind === 'eof' ? 'the end of the query' : JSON.stringify(t.text.slice(0, 20));
    return new PromQLSyntaxError(`${what} at position ${t.pos}, found ${found}`);
  }
  private enter(t: Token): void {
    if (++this.depth > MAX_DEPTH)
      throw new PromQLSyntaxError(`the query nests deeper than ${MAX_DEPTH} levels at position ${t.pos}`);
  }

  /** Binary operator at the cursor, if any: symbols, or the keywords and/or/unless/atan2. */
  private binaryOp(): string | undefined {
    const t = this.peek();
    if (t.kind === 'op' && t.text in PRECEDENCE) return t.text;
    if (t.kind === 'ident' && (SET_OPERATORS.has(t.text) || t.text === 'atan2')) return t.text;
    return undefined;
  }

  private expr(minPrec: number): PromNode {
    const start = this.peek();
    this.enter(start);
    let lhs = this.unary();
    for (;;) {
      const op = this.binaryOp();
      if (op === undefined) break;
      const prec = PRECEDENCE[op]!;
      if (prec < minPrec) break;
      this.next();
      const bool = this.is('bool', 'ident') ? (this.next(), true) : false;
      if (bool && !COMPARISONS.has(op)) throw this.error(this.peek(), '`bool` is only allowed after a comparison');
      let matching: { mode: 'on' | 'ignoring'; labels: string[] } | undefined;
      let group: { side: 'left' | 'right'; labels: string[] } | undefined;
      if (this.is('on', 'ident') || this.is('ignoring', 'ident')) {
        const mode = this.next().text as 'on' | 'ignoring';
        matching = { mode, labels: this.labelList() };
        if (this.is('group_left', 'ident') || this.is('group_right', 'ident')) {
          const side = this.next().text === 'group_left' ? 'left' : 'right';
          group = { side, labels: this.is('(', 'punct') ? this.labelList() : [] };
        }
      }
      if (group && SET_OPERATORS.has(op)) throw this.error(this.peek(), `group modifiers are not allowed with ${op}`);
      // `^` is right-associative: its right side may hold another `^` of the same level.
      const rhs = this.expr(op === '^' ? prec : prec + 1);
      lhs = { kind: 'binary', op, lhs, rhs, bool, ...(matching ? { matching } : {}), ...(group ? { group } : {}) };
    }
    this.depth--;
    return lhs;
  }

  /** Unary +/- bind looser than `^` and tighter than `*` (as in Prometheus: -2^2 is -4). */
  private unary(): PromNode {
    const t = this.peek();
    if (t.kind === 'op' && (t.text === '-' || t.text === '+')) {
      this.next();
      this.enter(t);
      const expr = this.expr(PRECEDENCE['^']!);
      this.depth--;
      return { kind: 'unary', op: t.text, expr };
    }
    return this.postfix(this.primary());
  }

  private primary(): PromNode {
    const t = this.next();
    switch (t.kind) {
      case 'num':
        return { kind: 'number', value: t.value! };
      case 'str':
        return { kind: 'string', value: t.str! };
      case 'punct':
        if (t.text === '(') {
          const inner = this.expr(0);
          this.expect(')');
          return inner;
        }
        if (t.text === '{') return this.selector(undefined);
        throw this.error(t, 'expected an expression');
      case 'ident':
        return this.identifier(t);
      default:
        throw this.error(t, 'expected an expression');
    }
  }

  private identifier(t: Token): PromNode {
    const lower = t.text.toLowerCase();
    if (lower === 'inf' || lower === 'nan') return { kind: 'number', value: lower === 'inf' ? Infinity : NaN };
    if (AGGREGATIONS.has(t.text) && (this.is('(', 'punct') || this.is('by', 'ident') || this.is('without', 'ident')))
      return this.aggregate(t.text);
    if (this.is('(', 'punct')) return this.call(t.text);
    if (SET_OPERATORS.has(t.text) || t.text === 'atan2' || t.text === 'bool' || t.text === 'offset')
      throw this.error(t, 'expected an expression');
    if (this.is('{', 'punct')) {
      this.next();
      return this.selector(t.text);
    }
    return { kind: 'selector', name: t.text, matchers: [] };
  }

  private call(func: string): PromNode {
    this.expect('(');
    const args: PromNode[] = [];
    if (!this.is(')', 'punct')) {
      for (;;) {
        args.push(this.expr(0));
        if (!this.is(',', 'punct')) break;
        this.next();
      }
    }
    this.expect(')');
    return { kind: 'call', func, args };
  }

  private aggregate(op: string): PromNode {
    let grouping = this.grouping();
    this.expect('(');
    const args: PromNode[] = [];
    for (;;) {
      args.push(this.expr(0));
      if (!this.is(',', 'punct')) break;
      this.next();
    }
    this.expect(')');
    const after = this.grouping();
    if (after) {
      if (grouping) throw this.error(this.peek(), 'grouping given twice');
      grouping = after;
    }
    const wanted = PARAMETRIC.has(op) ? 2 : 1;
    if (args.length !== wanted)
      throw new PromQLSyntaxError(`${op} takes ${wanted} argument${wanted > 1 ? 's' : ''}, got ${args.length}`);
    const expr = args[wanted - 1]!;
    return {
      kind: 'aggregate',
      op,
      expr,
      ...(wanted === 2 ? { param: args[0]! } : {}),
      ...(grouping ? { grouping } : {}),
    };
  }

  private grouping(): { mode: 'by' | 'without'; labels: string[] } | undefined {
    if (!this.is('by', 'ident') && !this.is('without', 'ident')) return undefined;
    const mode = this.next().text as 'by' | 'without';
    return { mode, labels: this.labelList() };
  }

  private labelList(): string[] {
    this.expect('(');
    const labels: string[] = [];
    while (!this.is(')', 'punct')) {
      const t = this.next();
      if (t.kind !== 'ident' || !LABEL.test(t.text)) throw this.error(t, 'expected a label name');
      labels.push(t.text);
      if (!this.is(',', 'punct')) break;
      this.next();
    }
    this.expect(')');
    return labels;
  }

  /** After `{` (and the metric name, if any): matchers up to `}`. */
  private selector(name: string | undefined): PromNode {
    const matchers: Matcher[] = [];
    while (!this.is('}', 'punct')) {
      const l = this.next();
      if (l.kind !== 'ident' || !LABEL.test(l.text)) throw this.error(l, 'expected a label name');
      const op = this.next();
      if (op.kind !== 'op' || !['=', '!=', '=~', '!~'].includes(op.text))
        throw this.error(op, 'expected one of = != =~ !~');
      const v = this.next();
      if (v.kind !== 'str') throw this.error(v, 'expected a quoted label value');
      matchers.push({ label: l.text, op: op.text as MatchOp, value: v.str! });
      if (!this.is(',', 'punct')) break;
      this.next();
    }
    this.expect('}');
    if (name !== undefined && matchers.some((m) => m.label === '__name__'))
      throw new PromQLSyntaxError(`metric name ${name} is also given as __name__`);
    if (name === undefined && matchers.length === 0)
      throw new PromQLSyntaxError('a selector needs a metric name or at least one matcher');
    return { kind: 'selector', ...(name !== undefined ? { name } : {}), matchers };
  }

  /** Range windows, subquery windows, offset and @ after an operand. */
  private postfix(node: PromNode): PromNode {
    for (;;) {
      if (this.is('[', 'punct')) {
        const open = this.next();
        const range = this.duration();
        if (this.is(':', 'punct')) {
          this.next();
          const step = this.is(']', 'punct') ? undefined : this.duration();
          this.expect(']');
          node = { kind: 'subquery', expr: node, rangeMs: range, ...(step !== undefined ? { stepMs: step } : {}) };
          continue;
        }
        this.expect(']');
        if (
          node.kind !== 'selector' ||
          node.rangeMs !== undefined ||
          node.offsetMs !== undefined ||
          node.at !== undefined
        )
          throw this.error(open, 'a range window needs a plain series selector before it');
        node = { ...node, rangeMs: range };
        continue;
      }
      if (this.is('offset', 'ident')) {
        const t = this.next();
        if (!isModifiable(node) || node.offsetMs !== undefined)
          throw this.error(t, 'offset needs a selector or subquery before it (once)');
        const negative = this.is('-', 'op') ? (this.next(), true) : false;
        const d = this.duration();
        node = { ...node, offsetMs: negative ? -d : d };
        continue;
      }
      if (this.is('@', 'punct')) {
        const t = this.next();
        if (!isModifiable(node) || node.at !== undefined)
          throw this.error(t, '@ needs a selector or subquery before it (once)');
        node = { ...node, at: this.atValue() };
        continue;
      }
      return node;
    }
  }

  private duration(): number {
    const t = this.next();
    if (t.kind !== 'dur') throw this.error(t, 'expected a duration such as 5m');
    if (t.value! <= 0) throw this.error(t, 'durations must be positive');
    return t.value!;
  }

  private atValue(): At {
    const t = this.next();
    if (t.kind === 'num') return t.value!;
    if (t.kind === 'ident' && (t.text === 'start' || t.text === 'end')) {
      this.expect('(');
      this.expect(')');
      return t.text;
    }
    throw this.error(t, 'expected a Unix timestamp, start() or end() after @');
  }
}

const isModifiable = (n: PromNode): n is Extract<PromNode, { kind: 'selector' | 'subquery' }> =>
  n.kind === 'selector' || n.kind === 'subquery';

/** Parses `src` or throws PromQLSyntaxError. */
export function parsePromQL(src: string): PromNode {
  return new Parser(lex(src)).parse();
}
