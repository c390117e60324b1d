import type { EntityManager } from '@mikro-orm/postgresql';
import type { Role } from '../../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { findById, iso } from '../common.ts';

export interface RoleRow {
  id: string;
  name: string;
  description: string;
  permissions: string[];
  is_system: boolean;
  created_at: string;
  updated_at: string;
}

export const COLUMNS = `id, name, description, permissions, is_system, created_at, updated_at`;
export const out = (r: RoleRow): Role => ({ ...r, created_at: iso(r.created_at), updated_at: iso(r.updated_at) });

export const findRoleRow = (em: EntityManager, id: string, lock = false): Promise<RoleRow> =>
  findById<RoleRow>(em, 'roles', COLUMNS, id, 'role', lock);

export const refuseSystem = (role: RoleRow, verb: string): void => {
  if (role.is_system) throw new DomainError('forbidden', `system roles cannot be ${verb}`);
};

export const DUPLICATE_NAME = 'a role with this name already exists';
