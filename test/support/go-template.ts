/**
 * A renderer for the subset of Go's `text/template` (with sprig's `toJson`) that notification templates use, with Go's
 * semantics where they matter to a receiver: a missing map key prints `<no value>`, a field of a missing value is
 * missing too, a field of an explicit null is an error ("nil pointer evaluating"), `printf` of a missing value prints
 * `%!s(<nil>)`, and `toJson` is `json.Marshal` (`null` for missing, `<`, `>`, `&` escaped, map keys sorted).
 * Anything outside the subset (variables, parentheses, control actions, other functions) throws instead of guessing.
 */

/** Go's invalid reflect.Value: what a missing map key evaluates to. */
const MISSING: unique symbol = Symbol('missing');
type Value = unknown;

export class GoTemplateError extends Error {}

type Token =
  | { kind: 'field'; path: string[] }
  | { kind: 'string'; value: string }
  | { kind: 'ident'; name: string }
  | { kind: 'pipe' };

function tokenize(action: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < action.length) {
    const c = action[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '|') {
      tokens.push({ kind: 'pipe' });
      i++;
    } else if (c === '.') {
      const m = /^(\.[A-Za-z_][A-Za-z0-9_]*)+|^\./.exec(action.slice(i))![0];
      tokens.push({ kind: 'field', path: m === '.' ? [] : m.slice(1).split('.') });
      i += m.length;
    } else if (c === '"') {
      const m = /^"(?:[^"\\]|\\.)*"/.exec(action.slice(i));
      if (!m) throw new GoTemplateError(`unterminated quoted string in {{${action}}}`);
      tokens.push({ kind: 'string', value: JSON.parse(m[0]) as string });
      i += m[0].length;
    } else if (c === '`') {
      const end = action.indexOf('`', i + 1);
      if (end < 0) throw new GoTemplateError(`unterminated raw string in {{${action}}}`);
      tokens.push({ kind: 'string', value: action.slice(i + 1, end) });
      i = end + 1;
    } else {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(action.slice(i));
      if (!m) throw new GoTemplateError(`unsupported syntax at ${JSON.stringify(action.slice(i))} in {{${action}}}`);
      tokens.push({ kind: 'ident', name: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

function field(data: Value, path: string[], where: string): Value {
  let v = data;
  for (const name of path) {
    if (v === MISSING || v === undefined) return MISSING;
    if (v === null) throw new GoTemplateError(`${where}: nil pointer evaluating interface {}.${name}`);
    if (typeof v !== 'object' || Array.isArray(v))
      throw new GoTemplateError(`${where}: can't evaluate field ${name} in type ${typeof v}`);
    v = Object.hasOwn(v, name) ? (v as Record<string, Value>)[name] : MISSING;
  }
  return v;
}

/** fmt's %v of the values a JSON-decoded object holds. */
function goString(v: Value): string {
  if (v === MISSING || v === null || v === undefined) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new GoTemplateError(`printing ${Array.isArray(v) ? 'a list' : 'a map'} is outside this renderer's subset`);
}

/** Go's json.Marshal of a JSON-decoded value. */
function marshal(v: Value): string {
  if (v === MISSING || v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return `[${v.map(marshal).join(',')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, Value>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${marshal(k)}:${marshal(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function sprintf(format: string, args: Value[]): string {
  let n = 0;
  return format.replace(/%([%svdq])/g, (_, verb: string) => {
    if (verb === '%') return '%';
    if (n >= args.length) return `%!${verb}(MISSING)`;
    const a = args[n++];
    if (a === MISSING || a === null || a === undefined) return `%!${verb}(<nil>)`;
    return verb === 'q' ? JSON.stringify(goString(a)) : goString(a);
  });
}

const FUNCTIONS: Record<string, (args: Value[]) => Value> = {
  toJson: (args) => marshal(args[0]),
  printf: (args) => sprintf(String(args[0]), args.slice(1)),
  print: (args) => args.map(goString).join(''),
};

function evalPipeline(action: string, data: Value): Value {
  const commands: Token[][] = [[]];
  for (const t of tokenize(action)) {
    if (t.kind === 'pipe') commands.push([]);
    else commands.at(-1)!.push(t);
  }
  let result: Value = MISSING;
  commands.forEach((cmd, i) => {
    const [head, ...rest] = cmd;
    if (!head) throw new GoTemplateError(`missing command in {{${action}}}`);
    const operand = (t: Token): Value => {
      if (t.kind === 'field') return field(data, t.path, `{{${action}}}`);
      if (t.kind === 'string') return t.value;
      throw new GoTemplateError(`${t.kind === 'ident' ? t.name : t.kind} is not an operand in {{${action}}}`);
    };
    if (head.kind === 'ident') {
      const fn = FUNCTIONS[head.name];
      if (!fn) throw new GoTemplateError(`function "${head.name}" not defined`);
      const args = rest.map(operand);
      result = fn(i > 0 ? [...args, result] : args);
    } else {
      if (rest.length > 0 || i > 0) throw new GoTemplateError(`can't give argument to non-function in {{${action}}}`);
      result = operand(head);
    }
  });
  return result;
}

/** Renders `template` over `data` (the notification's variables: `app`, `context`, …). */
export function renderGoTemplate(template: string, data: Record<string, Value>): string {
  let out = '';
  let rest = template;
  for (;;) {
    const open = rest.indexOf('{{');
    if (open < 0) return out + rest;
    let text = rest.slice(0, open);
    const close = rest.indexOf('}}', open);
    if (close < 0) throw new GoTemplateError('unclosed action');
    let action = rest.slice(open + 2, close);
    // `{{- ` and ` -}}` trim the white space beside the action.
    if (action.startsWith('- ')) text = text.trimEnd();
    let after = rest.slice(close + 2);
    if (action.endsWith(' -')) after = after.trimStart();
    action = action.replace(/^- /, '').replace(/ -$/, '').trim();
    if (action.startsWith('/*')) {
      out += text;
    } else {
      const v = evalPipeline(action, data);
      out += text + (v === MISSING || v === null || v === undefined ? '<no value>' : goString(v));
    }
    rest = after;
  }
}
