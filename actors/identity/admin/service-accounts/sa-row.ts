import type { EntityManager } from '@mikro-orm/postgresql';
import type { ServiceAccount } from '../../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { iso, isoOrNull, sql, visibleScope } from '../common.ts';

export interface SaRow {
  id: string;
  name: string;
  description: string;
  role_id: string;
  role_name: string;
  client_scope: string[];
  expires_at: string | null;
  is_active: boolean;
  api_key_hash: string;
  api_key_prefix: string;
  created_by: string | null;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
}

export const COLUMNS = `sa.id, sa.name, sa.description, sa.role_id, r.name AS role_name, sa.client_scope, sa.expires_at, sa.is_active, sa.api_key_hash,
  sa.api_key_prefix, sa.created_by, sa.last_used_at, sa.created_at, sa.updated_at`;
export const FROM = 'service_accounts sa JOIN roles r ON r.id = sa.role_id';

/** The public view: the key hash never leaves the actor. */
export const out = (s: SaRow): ServiceAccount => ({
  id: s.id,
  name: s.name,
  description: s.description,
  role_id: s.role_id,
  role_name: s.role_name,
  client_scope: s.client_scope,
  expires_at: isoOrNull(s.expires_at),
  is_active: s.is_active,
  api_key_prefix: s.api_key_prefix,
  created_by: s.created_by,
  last_used_at: isoOrNull(s.last_used_at),
  created_at: iso(s.created_at),
  updated_at: iso(s.updated_at),
});

/** The public view for a reader: clients of the scope it may not see are left out. */
export const seenBy = (visible: 'all' | Set<string>, s: SaRow): ServiceAccount => ({
  ...out(s),
  client_scope: visibleScope(visible, s.client_scope),
});

export async function findSa(em: EntityManager, id: string, lock = false): Promise<SaRow> {
  const [sa] = await sql<SaRow>(
    em,
    `SELECT ${COLUMNS} FROM ${FROM} WHERE sa.id = ?${lock ? ' FOR UPDATE OF sa' : ''}`,
    [id],
  );
  if (!sa) throw new DomainError('not_found', 'service account not found');
  return sa;
}
