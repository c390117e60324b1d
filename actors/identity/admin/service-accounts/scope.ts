import type { EntityManager } from '@mikro-orm/postgresql';
import { DomainError } from '../../../../contracts/errors.ts';
import { sql } from '../common.ts';

/** `["*"]` → 'all'; otherwise the distinct client ids, each of which must exist. */
export async function resolveScope(em: EntityManager, scope: readonly string[]): Promise<'all' | string[]> {
  if (scope.length === 1 && scope[0] === '*') return 'all';
  const ids = [...new Set(scope)];
  const found = new Set(
    (await sql<{ id: string }>(em, `SELECT id FROM clients WHERE id IN (?)`, [ids])).map((r) => r.id),
  );
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0)
    throw new DomainError(
      'not_found',
      `client${missing.length > 1 ? 's' : ''} not found: ${missing.slice(0, 10).join(', ')}`,
    );
  return ids;
}

export const scopeArray = (scope: 'all' | string[]): string[] => (scope === 'all' ? ['*'] : scope);
export const scopeOf = (stored: readonly string[]): 'all' | string[] => (stored.includes('*') ? 'all' : [...stored]);
