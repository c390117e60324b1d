/**
 * PQL tokens. Positions are 1-based and count characters (Unicode code points), as users see them.
 */

/** A glob pattern: literal text and `null` for a wildcard (an unescaped `*`). */
export type GlobPart = string | null;

export type Token =
  | { kind: 'word'; text: string; pos: number; end: number }
  /** `value`: the decoded text (an escaped `\*` is a plain `*`); `glob`: the same text as a pattern. */
  | { kind: 'string'; value: string; glob: GlobPart[]; raw: string; pos: number; end: number }
  /** Anything that starts with a digit (or `-` and a digit): a number, maybe with a size unit, or a malformed one. */
  | { kind: 'number'; text: string; pos: number; end: number }
  | { kind: 'op'; text: '=' | '!=' | '~' | '>' | '>=' | '<' | '<='; pos: number; end: number }
  | { kind: 'punct'; text: '(' | ')' | '[' | ']' | ','; pos: number; end: number }
  | { kind: 'eof'; pos: number; end: number };

/** A query that cannot be parsed: the message carries the position and what was expected. */
export class PqlError extends Error {
  override name = 'PqlError';
}

const WORD_START = /[A-Za-z_]/;
const WORD_CHAR = /[A-Za-z0-9_.\-/]/;
const NUMBER_CHAR = /[A-Za-z0-9_.]/;
const HEX4 = /^[0-9A-Fa-f]{4}$/;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };

/** How a character is shown in a message: printable as itself, others as a JSON escape. */
export const showChar = (c: string): string =>
  /^[\x20-\x7e]$/.test(c)
    ? c
    : JSON.stringify(c).slice(1, -1) || `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`;

export function tokenize(query: string): Token[] {
  const chars = Array.from(query);
  const tokens: Token[] = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i]!;
    const pos = i + 1;
    if (/\s/u.test(c)) {
      i++;
      continue;
    }
    if (c === '"') {
      const t = readString(chars, i);
      tokens.push(t);
      i = t.end - 1;
      continue;
    }
    if (/[0-9]/.test(c) || (c === '-' && /[0-9]/.test(chars[i + 1] ?? ''))) {
      let j = i + 1;
      while (j < chars.length && NUMBER_CHAR.test(chars[j]!)) j++;
      tokens.push({ kind: 'number', text: chars.slice(i, j).join(''), pos, end: j + 1 });
      i = j;
      continue;
    }
    if (WORD_START.test(c)) {
      let j = i + 1;
      while (j < chars.length && WORD_CHAR.test(chars[j]!)) j++;
      tokens.push({ kind: 'word', text: chars.slice(i, j).join(''), pos, end: j + 1 });
      i = j;
      continue;
    }
    const two = c + (chars[i + 1] ?? '');
    if (two === '!=' || two === '>=' || two === '<=') {
      tokens.push({ kind: 'op', text: two, pos, end: pos + 2 });
      i += 2;
      continue;
    }
    if (c === '=' || c === '~' || c === '>' || c === '<') {
      tokens.push({ kind: 'op', text: c, pos, end: pos + 1 });
      i++;
      continue;
    }
    if (c === '(' || c === ')' || c === '[' || c === ']' || c === ',') {
      tokens.push({ kind: 'punct', text: c, pos, end: pos + 1 });
      i++;
      continue;
    }
    if (c === "'")
      throw new PqlError(`unexpected character "'" at position ${pos}; strings are written in double quotes`);
    throw new PqlError(`unexpected character '${showChar(c)}' at position ${pos}`);
  }
  tokens.push({ kind: 'eof', pos: chars.length + 1, end: chars.length + 1 });
  return tokens;
}

/** A double-quoted string from `chars[start]`: escapes \" \\ \/ \n \t \r \b \f \uXXXX, and \* for a literal star. */
function readString(chars: string[], start: number): Extract<Token, { kind: 'string' }> {
  let value = '';
  let literal = '';
  const glob: GlobPart[] = [];
  let i = start + 1;
  for (;;) {
    if (i >= chars.length) throw new PqlError(`unterminated string starting at position ${start + 1}`);
    const c = chars[i]!;
    if (c === '"') break;
    if (c === '\\') {
      const e = chars[i + 1];
      if (e === undefined) throw new PqlError(`unterminated string starting at position ${start + 1}`);
      if (e === '*') {
        value += '*';
        literal += '*';
        i += 2;
        continue;
      }
      if (e === 'u') {
        const hex = chars.slice(i + 2, i + 6).join('');
        if (!HEX4.test(hex)) {
          const digits = /^[0-9A-Fa-f]*/.exec(hex)![0];
          throw new PqlError(`invalid escape '\\u${digits}' at position ${i + 1}; \\u takes four hex digits`);
        }
        const ch = String.fromCharCode(parseInt(hex, 16));
        value += ch;
        literal += ch;
        i += 6;
        continue;
      }
      const decoded = ESCAPES[e];
      if (decoded === undefined) throw new PqlError(`invalid escape '\\${showChar(e)}' at position ${i + 1}`);
      value += decoded;
      literal += decoded;
      i += 2;
      continue;
    }
    if (c === '*') {
      if (literal) glob.push(literal);
      glob.push(null);
      literal = '';
    } else {
      literal += c;
    }
    value += c;
    i++;
  }
  if (literal) glob.push(literal);
  return { kind: 'string', value, glob, raw: chars.slice(start, i + 1).join(''), pos: start + 1, end: i + 2 };
}
