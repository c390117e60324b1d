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
  try {
    regex(m.value);
    return null;
  } catch (err) {
    return `${m.label}${m.op}${JSON.stringify(m.value)} is not a valid regular expression (${(err as Error).message})`;
  }
}

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
