import type { EntityManager } from '@mikro-orm/postgresql';
import type { UserSummary } from '../../../../contracts/domains/identity-admin.ts';
import { findById, iso, isoOrNull } from '../common.ts';

type Status = 'invited' | 'active' | 'disabled';

export interface UserRow {
  id: string;
  email: string;
  display_name: string;
  status: Status;
  is_super_admin: boolean;
  mfa_enabled: boolean;
  has_password: boolean;
  auth_provider: string | null;
  auth_provider_id: string | null;
  last_login_at: string | null;
  created_at: string;
  updated_at: string;
}

export const USER_COLUMNS = `id, email, display_name, status, is_super_admin, mfa_enabled, password_hash IS NOT NULL AS has_password,
  auth_provider, auth_provider_id, last_login_at, created_at, updated_at`;

export const summary = (u: UserRow): UserSummary => ({
  id: u.id,
  email: u.email,
  display_name: u.display_name,
  status: u.status,
  is_super_admin: u.is_super_admin,
  mfa_enabled: u.mfa_enabled,
  last_login_at: isoOrNull(u.last_login_at),
  created_at: iso(u.created_at),
});

export const findUser = (em: EntityManager, id: string, lock = false): Promise<UserRow> =>
  findById<UserRow>(em, 'users', USER_COLUMNS, id, 'user', lock);
