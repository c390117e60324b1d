import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** Identity tables (migrations/postgres/Migration0002_identity.ts). Foreign keys are plain uuid columns. */

export const UserEntity = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.uuid().primary(),
    email: p.string(),
    display_name: p.string(),
    status: p.string().$type<'invited' | 'active' | 'disabled'>(),
    is_super_admin: p.boolean().default(false),
    password_hash: p.string().nullable(),
    mfa_enabled: p.boolean().default(false),
    mfa_secret_enc: p.string().nullable(),
    mfa_last_used_step: p.bigint('number').nullable(),
    auth_provider: p.string().nullable(),
    auth_provider_id: p.string().nullable(),
    last_login_at: p.datetime().nullable(),
    created_at: p.datetime().onCreate(() => new Date()),
    updated_at: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type User = InferEntity<typeof UserEntity>;

export const PasswordHistoryEntity = defineEntity({
  name: 'PasswordHistory',
  tableName: 'password_history',
  properties: {
    id: p.uuid().primary(),
    user_id: p.uuid(),
    password_hash: p.string(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});

export const RecoveryCodeEntity = defineEntity({
  name: 'RecoveryCode',
  tableName: 'mfa_recovery_codes',
  properties: {
    id: p.uuid().primary(),
    user_id: p.uuid(),
    code_hash: p.string(),
    used_at: p.datetime().nullable(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});

export const SessionEntity = defineEntity({
  name: 'Session',
  tableName: 'sessions',
  properties: {
    id: p.uuid().primary(),
    user_id: p.uuid(),
    ip_address: p.string().nullable(),
    user_agent: p.string().nullable(),
    device_label: p.string().nullable(),
    is_revoked: p.boolean().default(false),
    revoked_at: p.datetime().nullable(),
    revoked_reason: p.string().nullable(),
    last_active_at: p.datetime(),
    expires_at: p.datetime(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});
export type Session = InferEntity<typeof SessionEntity>;

export const RefreshTokenEntity = defineEntity({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    token_hash: p.string().primary(),
    session_id: p.uuid(),
    created_at: p.datetime().onCreate(() => new Date()),
    rotated_at: p.datetime().nullable(),
  },
});

export const OneTimeTokenEntity = defineEntity({
  name: 'OneTimeToken',
  tableName: 'one_time_tokens',
  properties: {
    id: p.uuid().primary(),
    user_id: p.uuid(),
    purpose: p.string().$type<'reset' | 'invite'>(),
    token_hash: p.string(),
    expires_at: p.datetime(),
    used_at: p.datetime().nullable(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});

export const RoleEntity = defineEntity({
  name: 'Role',
  tableName: 'roles',
  properties: {
    id: p.uuid().primary(),
    name: p.string(),
    description: p.string().default(''),
    permissions: p.array().columnType('text[]'),
    is_system: p.boolean().default(false),
    created_at: p.datetime().onCreate(() => new Date()),
    updated_at: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Role = InferEntity<typeof RoleEntity>;

export const TeamEntity = defineEntity({
  name: 'Team',
  tableName: 'teams',
  properties: {
    id: p.uuid().primary(),
    name: p.string(),
    description: p.string().default(''),
    created_at: p.datetime().onCreate(() => new Date()),
    updated_at: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});

export const TeamMemberEntity = defineEntity({
  name: 'TeamMember',
  tableName: 'team_members',
  properties: {
    team_id: p.uuid().primary(),
    user_id: p.uuid().primary(),
    role_id: p.uuid(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});

export const TeamClientEntity = defineEntity({
  name: 'TeamClient',
  tableName: 'team_clients',
  properties: {
    team_id: p.uuid().primary(),
    client_id: p.uuid().primary(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});

export const UserClientRoleEntity = defineEntity({
  name: 'UserClientRole',
  tableName: 'user_client_roles',
  properties: {
    user_id: p.uuid().primary(),
    client_id: p.uuid().primary(),
    role_id: p.uuid(),
    created_at: p.datetime().onCreate(() => new Date()),
  },
});

export const ServiceAccountEntity = defineEntity({
  name: 'ServiceAccount',
  tableName: 'service_accounts',
  properties: {
    id: p.uuid().primary(),
    name: p.string(),
    description: p.string().default(''),
    role_id: p.uuid(),
    client_scope: p.array().columnType('text[]'),
    expires_at: p.datetime().nullable(),
    is_active: p.boolean().default(true),
    api_key_hash: p.string(),
    api_key_prefix: p.string(),
    created_by: p.uuid().nullable(),
    last_used_at: p.datetime().nullable(),
    created_at: p.datetime().onCreate(() => new Date()),
    updated_at: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type ServiceAccount = InferEntity<typeof ServiceAccountEntity>;

export const AuditEntryEntity = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_log',
  properties: {
    id: p.uuid().primary(),
    actor_id: p.uuid().nullable(),
    actor_email: p.string().nullable(),
    actor_type: p.string().default('user'),
    action: p.string(),
    resource_type: p.string(),
    resource_id: p.string().nullable(),
    client_ids: p.array().columnType('uuid[]'),
    details: p.json<Record<string, unknown>>(),
    ip_address: p.string().nullable(),
    user_agent: p.string().nullable(),
    request_id: p.string().nullable(),
    created_at: p.datetime(),
  },
});

export const identityEntities = [
  UserEntity,
  PasswordHistoryEntity,
  RecoveryCodeEntity,
  SessionEntity,
  RefreshTokenEntity,
  OneTimeTokenEntity,
  RoleEntity,
  TeamEntity,
  TeamMemberEntity,
  TeamClientEntity,
  UserClientRoleEntity,
  ServiceAccountEntity,
  AuditEntryEntity,
];
