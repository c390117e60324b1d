import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import {
  ASSIGNMENT_IMMUTABLE,
  USER_IMMUTABLE,
  type UserDetail,
  type UserSummary,
} from '../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import type { IdentityDeps } from '../deps.ts';
import {
  assertCanGrant,
  callerUserId,
  canSee,
  clientsOfUser,
  conflictOnDuplicate,
  findClient,
  findRole,
  iso,
  isoOrNull,
  pageOf,
  requireOnEvery,
  requireVisibleUser,
  sql,
  visibleClients,
  visibleTeamsSql,
  visibleUsersSql,
  type IdentityHandlers,
  findById,
} from './common.ts';
import { emailSenderConfigured, sendInvitation, sendPasswordReset } from '../email.ts';
import { cancelOneTimeTokens, createOneTimeToken } from '../one-time-tokens.ts';
import { storedEmail } from '../email-address.ts';

type Status = 'invited' | 'active' | 'disabled';

interface UserRow {
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

const USER_COLUMNS = `id, email, display_name, status, is_super_admin, mfa_enabled, password_hash IS NOT NULL AS has_password,
  auth_provider, auth_provider_id, last_login_at, created_at, updated_at`;

const summary = (u: UserRow): UserSummary => ({
  id: u.id,
  email: u.email,
  display_name: u.display_name,
  status: u.status,
  is_super_admin: u.is_super_admin,
  mfa_enabled: u.mfa_enabled,
  last_login_at: isoOrNull(u.last_login_at),
  created_at: iso(u.created_at),
});

const findUser = (em: EntityManager, id: string, lock = false): Promise<UserRow> =>
  findById<UserRow>(em, 'users', USER_COLUMNS, id, 'user', lock);

interface AssignmentRow {
  client_id: string;
  client_name: string;
  client_slug: string;
  role_id: string;
  role_name: string;
  created_at: string;
}

/** A user's direct assignments, limited to the clients the caller may see users of. */
async function assignmentsOf(
  em: EntityManager,
  ctx: CallerContext,
  userId: string,
  clientId?: string,
): Promise<AssignmentRow[]> {
  const rows = await sql<AssignmentRow>(
    em,
    `SELECT c.id AS client_id, c.name AS client_name, c.slug AS client_slug, r.id AS role_id, r.name AS role_name, ucr.created_at
       FROM user_client_roles ucr JOIN clients c ON c.id = ucr.client_id JOIN roles r ON r.id = ucr.role_id
      WHERE ucr.user_id = ?${clientId ? ' AND ucr.client_id = ?' : ''}
      ORDER BY lower(c.name), c.id`,
    clientId ? [userId, clientId] : [userId],
  );
  const visible = visibleClients(ctx, ['users:read']);
  return rows.filter((r) => canSee(visible, r.client_id));
}

const assignmentOut = (a: AssignmentRow) => ({ ...a, created_at: iso(a.created_at) });

/** A user with its teams and direct assignments, each limited to what the caller may see of them. */
async function detail(em: EntityManager, ctx: CallerContext, id: string): Promise<UserDetail> {
  const user = await findUser(em, id);
  const visibleTeams = visibleTeamsSql(visibleClients(ctx, ['users:read']), 't');
  const teams = await sql<{ team_id: string; team_name: string; role_id: string; role_name: string }>(
    em,
    `SELECT t.id AS team_id, t.name AS team_name, r.id AS role_id, r.name AS role_name
       FROM team_members tm JOIN teams t ON t.id = tm.team_id JOIN roles r ON r.id = tm.role_id
      WHERE tm.user_id = ? AND ${visibleTeams.where} ORDER BY lower(t.name), t.id`,
    [id, ...visibleTeams.params],
  );
  const clients = (await assignmentsOf(em, ctx, id)).map(
    ({ client_id, client_name, client_slug, role_id, role_name }) => ({
      client_id,
      client_name,
      client_slug,
      role_id,
      role_name,
    }),
  );
  return {
    ...summary(user),
    auth_provider: user.auth_provider,
    auth_provider_id: user.auth_provider_id,
    updated_at: iso(user.updated_at),
    teams,
    clients,
  };
}

/**
 * Acting on a user's account (rename, status, invitation, password reset) needs `permission` on every client the user
 * reaches, and a super admin's account is reachable by super admins only: an administrator of client A cannot
 * disable or take over the accounts of client B.
 */
async function guardTarget(em: EntityManager, ctx: CallerContext, userId: string, permission: string): Promise<void> {
  requireOnEvery(ctx, permission, await clientsOfUser(em, userId), 'this user');
}

async function revokeAllSessions(
  em: EntityManager,
  deps: IdentityDeps,
  userId: string,
  reason: string,
): Promise<number> {
  const rows = await sql<{ id: string }>(
    em,
    `UPDATE sessions SET is_revoked = true, revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND NOT is_revoked RETURNING id`,
    [new Date(deps.clock.now()), reason, userId],
  );
  // An unused invitation or reset link must not bring a disabled account back.
  await cancelOneTimeTokens(em, deps, userId, 'invite');
  await cancelOneTimeTokens(em, deps, userId, 'reset');
  return rows.length;
}

export function userHandlers(deps: IdentityDeps): IdentityHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  /**
   * A new invitation (invited users) or reset link (active users) for a user within the caller's reach, replacing
   * older ones of the same kind, then the mail with it.
   */
  const mailToken = async (ctx: CallerContext, id: string, purpose: 'invite' | 'reset'): Promise<UserRow> => {
    const { user, token } = await fork().transactional(async (tx) => {
      const user = await findUser(tx, id, true);
      await guardTarget(tx, ctx, id, 'users:write');
      if (purpose === 'invite' && user.status !== 'invited')
        throw new DomainError('conflict', `only invited users can be re-invited; this user is ${user.status}`);
      if (purpose === 'reset' && user.status !== 'active')
        throw new DomainError('conflict', `only active users can reset a password; this user is ${user.status}`);
      return { user, token: await createOneTimeToken(tx, deps, id, purpose) };
    });
    await (purpose === 'invite' ? sendInvitation : sendPasswordReset)(deps, user, token);
    return user;
  };

  return {
    'svc.identity.users.list': async ({ page, per_page }, { ctx }) => {
      requirePermission(ctx, 'users:read');
      const visible = visibleUsersSql(visibleClients(ctx, ['users:read']), 'u');
      return pageOf(
        fork(),
        {
          columns: USER_COLUMNS,
          from: `users u WHERE ${visible.where}`,
          params: visible.params,
          order: 'created_at DESC, id',
        },
        { page, per_page },
        (rows: UserRow[]) => rows.map(summary),
      );
    },

    'svc.identity.users.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'users:read');
      const em = fork();
      await requireVisibleUser(em, visibleClients(ctx, ['users:read']), id);
      return detail(em, ctx, id);
    },

    'svc.identity.users.create': async (input, { ctx }) => {
      requirePermission(ctx, 'users:write');
      const email = storedEmail(input.email);
      const display_name = input.display_name;
      const id = randomUUID();
      const em = fork();
      const token = await conflictOnDuplicate('a user with this e-mail already exists', () =>
        em.transactional(async (tx) => {
          await sql(tx, `INSERT INTO users (id, email, display_name, status) VALUES (?, ?, ?, 'invited')`, [
            id,
            email,
            display_name,
          ]);
          return createOneTimeToken(tx, deps, id, 'invite');
        }),
      );
      await sendInvitation(deps, { email, display_name }, token);
      await deps.audit.record(ctx, {
        action: 'user.created',
        resource_type: 'user',
        resource_id: id,
        // Users are global: their entries name no client (assignments name theirs).
        client_ids: [],
        details: { email, display_name, status: 'invited' },
      });
      return detail(fork(), ctx, id);
    },

    'svc.identity.users.update': async (input, { ctx }) => {
      requirePermission(ctx, 'users:write');
      const self = callerUserId(ctx);
      const changes: Record<string, { from: unknown; to: unknown }> = {};
      let revoked = 0;
      await fork().transactional(async (tx) => {
        const user = await findUser(tx, input.id, true);
        await guardTarget(tx, ctx, user.id, 'users:write');
        refuseChanges(input, user, USER_IMMUTABLE);
        // `invited` only travels as the echo of an invited user's GET; an invitation is accepted, never set.
        if (input.status === 'invited' && user.status !== 'invited')
          throw new DomainError(
            'bad_request',
            `body.status: cannot be set to "invited" (it is ${JSON.stringify(user.status)}); a user becomes invited only when created or invited again`,
            {
              field: 'status',
            },
          );
        if (input.display_name !== undefined && input.display_name !== user.display_name)
          changes.display_name = { from: user.display_name, to: input.display_name };
        if (input.is_super_admin !== undefined && input.is_super_admin !== user.is_super_admin) {
          if (ctx.access?.super_admin !== true)
            throw new DomainError('forbidden', 'only a super admin may grant or revoke super admin');
          if (user.id === self) throw new DomainError('conflict', 'you cannot revoke your own super admin flag');
          changes.is_super_admin = { from: user.is_super_admin, to: input.is_super_admin };
        }
        if (input.status !== undefined && input.status !== user.status) {
          if (input.status === 'disabled' && user.id === self)
            throw new DomainError('conflict', 'you cannot disable your own account');
          if (input.status === 'active' && user.status === 'invited')
            throw new DomainError('conflict', 'an invited user becomes active by accepting the invitation');
          if (input.status === 'active' && !user.has_password && !user.auth_provider_id)
            throw new DomainError(
              'conflict',
              'this account has no password and no single sign-on link, so it cannot be activated; invite the user again instead',
            );
          changes.status = { from: user.status, to: input.status };
        }
        if (Object.keys(changes).length === 0) return;
        await sql(
          tx,
          `UPDATE users SET display_name = COALESCE(?, display_name), is_super_admin = COALESCE(?, is_super_admin), status = COALESCE(?, status), updated_at = now() WHERE id = ?`,
          [
            changes.display_name ? input.display_name : null,
            changes.is_super_admin ? input.is_super_admin : null,
            changes.status ? input.status : null,
            input.id,
          ],
        );
        if (changes.status?.to === 'disabled') revoked = await revokeAllSessions(tx, deps, input.id, 'user_disabled');
      });
      if (changes.is_super_admin || changes.status) await deps.access.invalidateUsers([input.id]);
      if (Object.keys(changes).length > 0) {
        const action = changes.status?.to === 'disabled' ? 'user.disabled' : 'user.updated';
        await deps.audit.record(ctx, {
          action,
          resource_type: 'user',
          resource_id: input.id,
          client_ids: [],
          details: { changes, ...(changes.status?.to === 'disabled' ? { sessions_revoked: revoked } : {}) },
        });
      }
      return detail(fork(), ctx, input.id);
    },

    'svc.identity.users.disable': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'users:delete');
      if (id === callerUserId(ctx)) throw new DomainError('conflict', 'you cannot disable your own account');
      const result = await fork().transactional(async (tx) => {
        const user = await findUser(tx, id, true);
        await guardTarget(tx, ctx, id, 'users:delete');
        if (user.status !== 'disabled')
          await sql(tx, `UPDATE users SET status = 'disabled', updated_at = now() WHERE id = ?`, [id]);
        // Idempotent: sessions are revoked even when the account was already disabled.
        return { from: user.status, revoked: await revokeAllSessions(tx, deps, id, 'user_disabled') };
      });
      await deps.access.invalidateUsers([id]);
      if (result.from !== 'disabled' || result.revoked > 0)
        await deps.audit.record(ctx, {
          action: 'user.disabled',
          resource_type: 'user',
          resource_id: id,
          client_ids: [],
          details: { previous_status: result.from, sessions_revoked: result.revoked },
        });
      return {};
    },

    'svc.identity.users.resend_invite': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'users:write');
      const user = await mailToken(ctx, id, 'invite');
      await deps.audit.record(ctx, {
        action: 'user.invite_resent',
        resource_type: 'user',
        resource_id: id,
        client_ids: [],
        details: { email: user.email },
      });
      return { message: 'invitation sent' };
    },

    'svc.identity.users.reset_password': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'users:write');
      if (!emailSenderConfigured(deps.config))
        throw new DomainError(
          'conflict',
          'no e-mail sender is configured (set SVC_SMTP_HOST, or SVC_EMAIL_PROVIDER=resend with SVC_RESEND_API_KEY)',
        );
      const user = await mailToken(ctx, id, 'reset');
      await deps.audit.record(ctx, {
        action: 'user.password_reset_requested',
        resource_type: 'user',
        resource_id: id,
        client_ids: [],
        details: { email: user.email },
      });
      return { message: 'password reset e-mail sent' };
    },

    // Direct client assignments ------------------------------------------------------------------------------

    'svc.identity.users.clients.list': async ({ user_id }, { ctx }) => {
      requirePermission(ctx, 'users:read');
      const em = fork();
      await requireVisibleUser(em, visibleClients(ctx, ['users:read']), user_id);
      return (await assignmentsOf(em, ctx, user_id)).map(assignmentOut);
    },

    'svc.identity.users.clients.assign': async ({ user_id, client_id, role_id }, { ctx }) => {
      requirePermission(ctx, 'users:write', client_id);
      const role = await fork().transactional(async (tx) => {
        await findUser(tx, user_id);
        await findClient(tx, client_id);
        const role = await findRole(tx, role_id);
        assertCanGrant(ctx, role.permissions, [client_id]);
        await conflictOnDuplicate('the user already has a role on this client; change it with PUT', () =>
          sql(tx, `INSERT INTO user_client_roles (user_id, client_id, role_id) VALUES (?, ?, ?)`, [
            user_id,
            client_id,
            role_id,
          ]),
        );
        return role;
      });
      await deps.access.invalidateUsers([user_id]);
      await deps.audit.record(ctx, {
        action: 'user.client.assigned',
        resource_type: 'user',
        resource_id: user_id,
        client_ids: [client_id],
        details: { client_id, role_id, role_name: role.name },
      });
      const [row] = await assignmentsOf(fork(), ctx, user_id, client_id);
      if (!row) throw new DomainError('not_found', 'assignment not found');
      return assignmentOut(row);
    },

    'svc.identity.users.clients.update': async ({ user_id, client_id, role_id, sent }, { ctx }) => {
      requirePermission(ctx, 'users:write', client_id);
      const { role, previous } = await fork().transactional(async (tx) => {
        const [current] = await sql<{ role_id: string }>(
          tx,
          `SELECT role_id FROM user_client_roles WHERE user_id = ? AND client_id = ? FOR UPDATE`,
          [user_id, client_id],
        );
        if (!current) throw new DomainError('not_found', 'the user has no direct assignment on this client');
        refuseChanges(sent, { client_id }, ASSIGNMENT_IMMUTABLE);
        const role = await findRole(tx, role_id);
        assertCanGrant(ctx, role.permissions, [client_id]);
        await sql(tx, `UPDATE user_client_roles SET role_id = ? WHERE user_id = ? AND client_id = ?`, [
          role_id,
          user_id,
          client_id,
        ]);
        return { role, previous: current.role_id };
      });
      await deps.access.invalidateUsers([user_id]);
      await deps.audit.record(ctx, {
        action: 'user.client.updated',
        resource_type: 'user',
        resource_id: user_id,
        client_ids: [client_id],
        details: { client_id, from_role_id: previous, to_role_id: role_id, role_name: role.name },
      });
      const [row] = await assignmentsOf(fork(), ctx, user_id, client_id);
      if (!row) throw new DomainError('not_found', 'assignment not found');
      return assignmentOut(row);
    },

    'svc.identity.users.clients.remove': async ({ user_id, client_id }, { ctx }) => {
      requirePermission(ctx, 'users:delete', client_id);
      const removed = await sql<{ role_id: string }>(
        fork(),
        `DELETE FROM user_client_roles WHERE user_id = ? AND client_id = ? RETURNING role_id`,
        [user_id, client_id],
      );
      if (removed.length === 0) throw new DomainError('not_found', 'the user has no direct assignment on this client');
      await deps.access.invalidateUsers([user_id]);
      await deps.audit.record(ctx, {
        action: 'user.client.removed',
        resource_type: 'user',
        resource_id: user_id,
        client_ids: [client_id],
        details: { client_id, role_id: removed[0]?.role_id },
      });
      return {};
    },
  };
}
