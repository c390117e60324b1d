import type { LabelMatcher } from '../../../contracts/domains/events-notifications.ts';

/**
 * Label matchers as Alertmanager reads them: `=` and `!=` compare the value (a missing label is the empty string),
 * `=~` and `!~` match a regular expression anchored at both ends. Every matcher must hold.
 */

const compiled = new Map<string, RegExp>();

function regex(source: string): RegExp {
  let r = compiled.get(source);
  if (!r) {
    r = new RegExp(`^(?:${source})$`, 'u');
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(source, r);
  }
  return r;
}

/** Why a matcher cannot be used (its regular expression does not compile), or null. */
export function matcherProblem(m: LabelMatcher): string | null {
  if (m.op !== '=~' && m.op !== '!~') return null;
  const name = `${m.label}${m.op}${JSON.stringify(m.value)}`;
  try {
    // On its own first: a value that closes the anchoring group (`x)|(?:.*`) would match anything.
    new RegExp(m.value, 'u');
    regex(m.value);
  } catch (err) {
    return `${name} is not a valid regular expression (${(err as Error).message})`;
  }
  // JavaScript's engine backtracks: a quantified group that is itself quantified, such as (a+)+, can take
  // exponential time on one label value and hold up every client's notifications.
  if (NESTED_QUANTIFIER.test(m.value)) return `${name} repeats a repeated group, which can take exponential time`;
  return null;
}

/** A group containing + or * (or {n,}) followed by a quantifier. */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,\d*\})(?:[^()\\]|\\.)*\)(?:[+*]|\{\d+,?\d*\})/;

export function matches(m: LabelMatcher, labels: Record<string, string>): boolean {
  const value = labels[m.label] ?? '';
  switch (m.op) {
    case '=':
      return value === m.value;
    case '!=':
      return value !== m.value;
    case '=~':
      return regex(m.value).test(value);
    case '!~':
      return !regex(m.value).test(value);
  }
}

export const matchesAll = (ms: readonly LabelMatcher[], labels: Record<string, string>): boolean =>
  ms.every((m) => matches(m, labels));
