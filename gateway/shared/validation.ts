import type { FastifyRequest } from 'fastify';
import { DomainError } from '../../contracts/errors.ts';

/**
 * PostgreSQL cannot store U+0000 in text or jsonb; a NUL that reached an actor used to come back as an outage (503).
 * Refused at the boundary instead, for every route and every part of the request, naming the field.
 */
const MAX_DEPTH = 64;

/** The path of the first string (value or key) in `value` that contains U+0000, e.g. `body.items.0.name`. */
export function findNul(value: unknown, path: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], `${path}.${i}`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value)) {
    if (key.includes('\u0000')) return `${path}.${key.replaceAll('\u0000', '\\u0000')}`;
    const found = findNul(child, `${path}.${key}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** preValidation hook of both gateways: 400 `body.name: must not contain NUL characters`. */
export async function rejectNulCharacters(req: FastifyRequest): Promise<void> {
  const found = findNul(req.params, 'params') ?? findNul(req.query, 'query') ?? findNul(req.body, 'body');
  if (found) throw new DomainError('bad_request', `${found}: must not contain NUL characters`);
}
