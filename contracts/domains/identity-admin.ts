import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { Paged, Paging } from '../paging.ts';
import { subjects } from '../subject.ts';

/**
 * Administration of users, direct client assignments, teams, roles, service accounts, the access audit and the audit
 * log (docs/api/identity.md#administration). Every subject authorizes in the actor with the caller context; the
 * shapes below are the HTTP response bodies' `data` (lists travel as `{ items, total, page, per_page }` and the
 * gateway turns them into `{ data, meta }`).
 */

const Timestamp = z.iso.datetime();
const Id = z.uuid();

/** Pagination of every admin list: page ≥ 1 (default 1), per_page 1..100 (default 20). */
export const PageInput = z.object(Paging);

const NoContent = z.object({});
const Message = z.object({ message: z.string() });

const DisplayName = z.string().trim().min(1, 'must not be empty').max(200);
const Name = z.string().trim().min(1, 'must not be empty').max(100);
const Description = z.string().max(1000);

// ---------------------------------------------------------------------------------------------------------------
// Users

export const UserStatus = z.enum(['invited', 'active', 'disabled']);

export const UserSummary = z.object({
  id: Id,
  email: z.string(),
  display_name: z.string(),
  status: UserStatus,
  is_super_admin: z.boolean(),
  mfa_enabled: z.boolean(),
  last_login_at: Timestamp.nullable(),
  created_at: Timestamp,
});
export type UserSummary = z.infer<typeof UserSummary>;

export const UserTeam = z.object({ team_id: Id, team_name: z.string(), role_id: Id, role_name: z.string() });
export const UserClient = z.object({
  client_id: Id,
  client_name: z.string(),
  client_slug: z.string(),
  role_id: Id,
  role_name: z.string(),
});

export const UserDetail = UserSummary.extend({
  auth_provider: z.string().nullable(),
  auth_provider_id: z.string().nullable(),
  updated_at: Timestamp,
  teams: z.array(UserTeam),
  clients: z.array(UserClient),
});
export type UserDetail = z.infer<typeof UserDetail>;

export const CreateUserBody = z.object({
  /** Stored lower-case (e-mail lookups are case-insensitive). */
  email: z.email().max(254),
  display_name: DisplayName,
});

/** The e-mail is fixed at creation: echoing it is fine, another is 400 (contracts/immutable.ts). */
export const USER_IMMUTABLE = ['email'] as const;
/**
 * Status moves by PUT: active ↔ disabled, invited → disabled. `invited` is accepted only as an echo of an invited user
 * (GET → PUT): an invitation is accepted, never set.
 */
export const UpdateUserBody = z
  .object({
    display_name: DisplayName.optional(),
    is_super_admin: z.boolean().optional(),
    status: UserStatus.optional(),
    ...immutableFields(UserDetail, USER_IMMUTABLE),
  })
  .refine((b) => b.display_name !== undefined || b.is_super_admin !== undefined || b.status !== undefined, {
    message: 'give at least one of display_name, is_super_admin, status',
  });

// Direct client assignments

export const Assignment = UserClient.extend({ created_at: Timestamp });
export const AssignmentBody = z.object({ client_id: Id, role_id: Id });
/** The client, named by the path, is fixed: the listed assignment sent back is fine, another client is 400. */
export const ASSIGNMENT_IMMUTABLE = ['client_id'] as const;
export const AssignmentRoleBody = z.object({ role_id: Id, ...immutableFields(Assignment, ASSIGNMENT_IMMUTABLE) });

// ---------------------------------------------------------------------------------------------------------------
// Teams

export const TeamMember = z.object({
  user_id: Id,
  email: z.string(),
  display_name: z.string(),
  role_id: Id,
  role_name: z.string(),
});
export const TeamClient = z.object({ client_id: Id, name: z.string(), slug: z.string() });
export const Team = z.object({
  id: Id,
  name: z.string(),
  description: z.string(),
  members: z.array(TeamMember),
  clients: z.array(TeamClient),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Team = z.infer<typeof Team>;

export const CreateTeamBody = z.object({ name: Name, description: Description.default('') });
export const UpdateTeamBody = z
  .object({ name: Name.optional(), description: Description.optional() })
  .refine((b) => b.name !== undefined || b.description !== undefined, {
    message: 'give at least one of name, description',
  });
export const TeamMemberBody = z.object({ user_id: Id, role_id: Id });
/** The member, named by the path, is fixed: the listed member sent back is fine, another user is 400. */
export const TEAM_MEMBER_IMMUTABLE = ['user_id'] as const;
export const TeamMemberRoleBody = z.object({ role_id: Id, ...immutableFields(TeamMember, TEAM_MEMBER_IMMUTABLE) });
export const TeamClientBody = z.object({ client_id: Id });

// ---------------------------------------------------------------------------------------------------------------
// Roles and permissions

export const Role = z.object({
  id: Id,
  name: z.string(),
  description: z.string(),
  permissions: z.array(z.string()),
  is_system: z.boolean(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Role = z.infer<typeof Role>;

const Permissions = z.array(z.string().min(1).max(100)).max(500);
export const CreateRoleBody = z.object({ name: Name, description: Description.default(''), permissions: Permissions });
export const UpdateRoleBody = z
  .object({ name: Name.optional(), description: Description.optional(), permissions: Permissions.optional() })
  .refine((b) => b.name !== undefined || b.description !== undefined || b.permissions !== undefined, {
    message: 'give at least one of name, description, permissions',
  });

/** Who holds a role: direct client assignments, team memberships (per team), and service accounts. */
export const RoleUsage = z.object({
  role_id: Id,
  users: z.array(
    z.object({
      user_id: Id,
      email: z.string(),
      display_name: z.string(),
      client_id: Id,
      client_name: z.string(),
      client_slug: z.string(),
    }),
  ),
  teams: z.array(
    z.object({
      team_id: Id,
      team_name: z.string(),
      members: z.array(z.object({ user_id: Id, email: z.string(), display_name: z.string() })),
    }),
  ),
  service_accounts: z.array(z.object({ id: Id, name: z.string(), is_active: z.boolean() })),
});

// ---------------------------------------------------------------------------------------------------------------
// Access audit

/** One way a user reaches a client: a direct assignment, or a team membership (with the team). */
export const AccessGrant = z.object({
  source: z.enum(['direct', 'team']),
  team_id: Id.nullable(),
  team_name: z.string().nullable(),
  role_id: Id,
  role_name: z.string(),
  permissions: z.array(z.string()),
});
export const AccessByUser = z.object({
  user: z.object({
    id: Id,
    email: z.string(),
    display_name: z.string(),
    status: UserStatus,
    is_super_admin: z.boolean(),
  }),
  clients: z.array(
    z.object({
      client_id: Id,
      client_name: z.string(),
      client_slug: z.string(),
      permissions: z.array(z.string()),
      grants: z.array(AccessGrant),
    }),
  ),
});
export const AccessByClient = z.object({
  client: z.object({ id: Id, name: z.string(), slug: z.string() }),
  users: z.array(
    z.object({
      user_id: Id,
      email: z.string(),
      display_name: z.string(),
      status: UserStatus,
      permissions: z.array(z.string()),
      grants: z.array(AccessGrant),
    }),
  ),
  service_accounts: z.array(
    z.object({
      id: Id,
      name: z.string(),
      is_active: z.boolean(),
      all_clients: z.boolean(),
      role_id: Id,
      role_name: z.string(),
      permissions: z.array(z.string()),
    }),
  ),
});

// ---------------------------------------------------------------------------------------------------------------
// Service accounts

export const ClientScope = z.union([z.tuple([z.literal('*')]), z.array(Id).min(1).max(1000)], {
  error: 'must be ["*"] or a non-empty list of client uuids',
});

export const ServiceAccount = z.object({
  id: Id,
  name: z.string(),
  description: z.string(),
  role_id: Id,
  role_name: z.string(),
  client_scope: z.array(z.string()),
  expires_at: Timestamp.nullable(),
  is_active: z.boolean(),
  api_key_prefix: z.string(),
  created_by: Id.nullable(),
  last_used_at: Timestamp.nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type ServiceAccount = z.infer<typeof ServiceAccount>;

export const CreatedServiceAccount = ServiceAccount.extend({ api_key: z.string() });

export const CreateServiceAccountBody = z.object({
  name: Name,
  description: Description.default(''),
  role_id: Id,
  client_scope: ClientScope,
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
});
export const UpdateServiceAccountBody = z
  .object({
    name: Name.optional(),
    description: Description.optional(),
    role_id: Id.optional(),
    client_scope: ClientScope.optional(),
    expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
    is_active: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'give at least one field to change' });

// ---------------------------------------------------------------------------------------------------------------
// Audit log

export const AuditLogEntry = z.object({
  id: Id,
  actor_id: Id.nullable(),
  actor_email: z.string().nullable(),
  actor_type: z.string(),
  action: z.string(),
  resource_type: z.string(),
  resource_id: z.string().nullable(),
  /** The clients the entry concerns (empty: a global entry, shown only to super admins and all-client holders). */
  client_ids: z.array(Id),
  details: z.record(z.string(), z.unknown()),
  ip_address: z.string().nullable(),
  user_agent: z.string().nullable(),
  request_id: z.string().nullable(),
  created_at: Timestamp,
});

export const AuditLogQuery = PageInput.extend({
  actor_id: Id.optional(),
  action: z.string().min(1).max(100).optional(),
  resource_type: z.string().min(1).max(100).optional(),
  resource_id: z.string().min(1).max(200).optional(),
  from: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time' }).optional(),
  to: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time' }).optional(),
}).refine((q) => q.from === undefined || q.to === undefined || Date.parse(q.from) <= Date.parse(q.to), {
  message: 'from must not be after to',
  path: ['from'],
});

// ---------------------------------------------------------------------------------------------------------------

const ById = z.object({ id: Id });
const ByUser = z.object({ user_id: Id });

export const identityAdminSubjects = subjects({
  // users
  'svc.identity.users.list': {
    retry: 'safe',
    summary: 'Lists users (users:read).',
    request: PageInput,
    reply: Paged(UserSummary),
    errors: ['forbidden'],
  },
  'svc.identity.users.get': {
    retry: 'safe',
    summary: 'One user with teams and direct client assignments (users:read).',
    request: ById,
    reply: UserDetail,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.users.create': {
    summary: 'Creates an invited user and sends the invitation (users:write).',
    request: CreateUserBody,
    reply: UserDetail,
    errors: ['forbidden', 'conflict'],
    produces: { 'svc.work.email.send': { email: 'to' } },
  },
  'svc.identity.users.update': {
    summary: 'Changes display name, super-admin flag (super admins only) or status (users:write).',
    request: z.intersection(ById, UpdateUserBody),
    reply: UserDetail,
    errors: ['forbidden', 'not_found', 'conflict', 'bad_request'],
  },
  'svc.identity.users.disable': {
    summary: 'Disables a user: sessions revoked, access cache dropped (users:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.users.resend_invite': {
    summary:
      'Issues a new invitation token (older ones stop working) and e-mails it; invited users only (users:write).',
    request: ById,
    reply: Message,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.users.reset_password': {
    summary: 'Creates a password-reset token and e-mails it; needs a configured e-mail sender (users:write).',
    request: ById,
    reply: Message,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  // direct client assignments
  'svc.identity.users.clients.list': {
    retry: 'safe',
    summary: "A user's direct client assignments (users:read; only clients the caller may read users on).",
    request: ByUser,
    reply: z.array(Assignment),
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.users.clients.assign': {
    summary: 'Gives a user a role on a client directly (users:write on that client).',
    request: ByUser.extend(AssignmentBody.shape),
    reply: Assignment,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.users.clients.update': {
    summary:
      'Changes the role of a direct assignment (users:write on that client); `sent` holds the fixed fields as the body gave them.',
    request: ByUser.extend({
      client_id: Id,
      role_id: Id,
      sent: z.object(immutableFields(Assignment, ASSIGNMENT_IMMUTABLE)).default({}),
    }),
    reply: Assignment,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.identity.users.clients.remove': {
    summary: 'Removes a direct assignment (users:delete on that client).',
    request: ByUser.extend({ client_id: Id }),
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  // teams
  'svc.identity.teams.list': {
    retry: 'safe',
    summary: 'Lists teams with members and clients (teams:read).',
    request: PageInput,
    reply: Paged(Team),
    errors: ['forbidden'],
  },
  'svc.identity.teams.get': {
    retry: 'safe',
    summary: 'One team with members and clients (teams:read).',
    request: ById,
    reply: Team,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.teams.create': {
    summary: 'Creates a team (teams:write).',
    request: CreateTeamBody,
    reply: Team,
    errors: ['forbidden', 'conflict'],
  },
  'svc.identity.teams.update': {
    summary: 'Renames or re-describes a team (teams:write).',
    request: z.intersection(ById, UpdateTeamBody),
    reply: Team,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.teams.delete': {
    summary:
      'Deletes a team with its memberships and client links; former members lose that access at once (teams:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.teams.members.add': {
    summary: 'Adds a member with a role (teams:write).',
    request: z.object({ team_id: Id, user_id: Id, role_id: Id }),
    reply: Team,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.teams.members.update': {
    summary: "Changes a member's role (teams:write); `sent` holds the fixed fields as the body gave them.",
    request: z.object({
      team_id: Id,
      user_id: Id,
      role_id: Id,
      sent: z.object(immutableFields(TeamMember, TEAM_MEMBER_IMMUTABLE)).default({}),
    }),
    reply: Team,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.identity.teams.members.remove': {
    summary: 'Removes a member (teams:write).',
    request: z.object({ team_id: Id, user_id: Id }),
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.teams.clients.add': {
    summary: 'Links a client to a team (teams:write on that client).',
    request: z.object({ team_id: Id, client_id: Id }),
    reply: Team,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.teams.clients.remove': {
    summary: 'Unlinks a client from a team (teams:write on that client).',
    request: z.object({ team_id: Id, client_id: Id }),
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  // roles
  'svc.identity.roles.list': {
    retry: 'safe',
    summary: 'All roles: system roles first, then custom roles by name (roles:read).',
    request: z.object({}),
    reply: z.array(Role),
    errors: ['forbidden'],
  },
  'svc.identity.roles.get': {
    retry: 'safe',
    summary: 'One role (roles:read).',
    request: ById,
    reply: Role,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.roles.create': {
    summary: 'Creates a custom role; permissions are checked against the registry (roles:write).',
    request: CreateRoleBody,
    reply: Role,
    errors: ['forbidden', 'bad_request', 'conflict'],
  },
  'svc.identity.roles.update': {
    summary: 'Changes a custom role; holders see the change at once; system roles are refused (roles:write).',
    request: z.intersection(ById, UpdateRoleBody),
    reply: Role,
    errors: ['forbidden', 'not_found', 'bad_request', 'conflict'],
  },
  'svc.identity.roles.delete': {
    summary: 'Deletes an unused custom role; system roles are refused (roles:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.identity.roles.usage': {
    retry: 'safe',
    summary: 'Users, teams and service accounts holding a role (roles:read).',
    request: ById,
    reply: RoleUsage,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.permissions.list': {
    retry: 'safe',
    summary: 'Every registered `resource:action` permission (any authenticated caller).',
    request: z.object({}),
    reply: z.array(z.string()),
    errors: ['unauthorized'],
  },
  // access audit
  'svc.identity.access_audit.by_user': {
    retry: 'safe',
    summary: "A user's client access with role, source and permissions (roles:read or users:read).",
    request: ByUser,
    reply: AccessByUser,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.access_audit.by_client': {
    retry: 'safe',
    summary:
      'Everyone with access to a client, with role, source and permissions (roles:read or clients:read on that client).',
    request: z.object({ client_id: Id }),
    reply: AccessByClient,
    errors: ['forbidden', 'not_found'],
  },
  // service accounts
  'svc.identity.service_accounts.list': {
    retry: 'safe',
    summary: 'Lists service accounts, never their key hash (users:read).',
    request: PageInput,
    reply: Paged(ServiceAccount),
    errors: ['forbidden'],
  },
  'svc.identity.service_accounts.get': {
    retry: 'safe',
    summary: 'One service account (users:read).',
    request: ById,
    reply: ServiceAccount,
    errors: ['forbidden', 'not_found'],
  },
  'svc.identity.service_accounts.create': {
    summary: 'Creates a service account and returns its API key once (users:write).',
    request: CreateServiceAccountBody,
    reply: CreatedServiceAccount,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.identity.service_accounts.update': {
    summary: 'Changes a service account; the key sees the change from the next request (users:write).',
    request: z.intersection(ById, UpdateServiceAccountBody),
    reply: ServiceAccount,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.identity.service_accounts.delete': {
    summary: 'Deletes a service account; its key stops working from the next request (users:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  // audit log
  'svc.identity.audit.list': {
    retry: 'safe',
    summary: 'Audit-log entries, newest first, with filters (audit:read).',
    request: AuditLogQuery,
    reply: Paged(AuditLogEntry),
    errors: ['forbidden'],
  },
});
