import type { FastifyRequest } from 'fastify';
import { DomainError } from '../../contracts/errors.ts';

/**
 * Strings PostgreSQL cannot store, refused at the boundary for every route and every part of the request, naming the
 * field:
 * - U+0000 in text or jsonb (a NUL that reached an actor used to come back as an outage, 503);
 * - ill-formed UTF-16 (a lone surrogate, sent as `"\udfff"` in JSON): text columns got U+FFFD silently, and jsonb
 *   refuses the `\udfff` escape JSON.stringify writes for it, so the change's audit entry could never be stored.
 */
const MAX_DEPTH = 64;

export interface UnstorableString {
  /** Where, e.g. `body.items.0.name`. */
  path: string;
  problem: 'must not contain NUL characters' | 'must be well-formed Unicode (it contains a lone surrogate)';
}

const problemOf = (s: string): UnstorableString['problem'] | undefined =>
  s.includes('\u0000')
    ? 'must not contain NUL characters'
    : s.isWellFormed()
      ? undefined
      : 'must be well-formed Unicode (it contains a lone surrogate)';

/** A key as it appears in a path: NUL and lone surrogates spelt as `\uXXXX`, so the error message itself is well-formed. */
const showKey = (key: string): string =>
  key
    .replaceAll('\u0000', '\\u0000')
    .replace(
      /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16)}`,
    );

/** The first string (value or key) in `value` PostgreSQL cannot store, with why. */
export function findUnstorable(value: unknown, path: string, depth = 0): UnstorableString | undefined {
  if (typeof value === 'string') {
    const problem = problemOf(value);
    return problem ? { path, problem } : undefined;
  }
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorable(value[i], `${path}.${i}`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value)) {
    const problem = problemOf(key);
    if (problem) return { path: `${path}.${showKey(key)}`, problem };
    const found = findUnstorable(child, `${path}.${showKey(key)}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * preValidation hook of both gateways: 400 `body.name: must not contain NUL characters` or
 * `body.name: must be well-formed Unicode (it contains a lone surrogate)`.
 */
export async function rejectUnstorableStrings(req: FastifyRequest): Promise<void> {
  const found =
    findUnstorable(req.params, 'params') ?? findUnstorable(req.query, 'query') ?? findUnstorable(req.body, 'body');
  if (found) throw new DomainError('bad_request', `${found.path}: ${found.problem}`);
}
