import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { TEAM_MEMBER_IMMUTABLE, type Team } from '../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import type { IdentityDeps } from '../deps.ts';
import {
  assertCanGrant,
  canSee,
  conflictOnDuplicate,
  findClient,
  findRole,
  iso,
  pageOf,
  requireOnEvery,
  sql,
  visibleClients,
  visibleTeamsSql,
  visibleUsersSql,
  type IdentityHandlers,
  findById,
} from './common.ts';

interface TeamRow {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

const TEAM_COLUMNS = 'id, name, description, created_at, updated_at';

interface MemberRow {
  team_id: string;
  user_id: string;
  email: string;
  display_name: string;
  role_id: string;
  role_name: string;
}

interface TeamClientRow {
  team_id: string;
  client_id: string;
  name: string;
  slug: string;
}

/**
 * Teams with their members and clients; clients the caller may not see teams on are left out, and so are members it
 * may not see as users (on a team linked to no client, members placed on other clients only).
 */
async function withMembers(em: EntityManager, ctx: CallerContext, teams: TeamRow[]): Promise<Team[]> {
  if (teams.length === 0) return [];
  const ids = teams.map((t) => t.id);
  const visible = visibleClients(ctx, ['teams:read']);
  const visibleMembers = visibleUsersSql(visible, 'u');
  const members = await sql<MemberRow>(
    em,
    `SELECT tm.team_id, u.id AS user_id, u.email, u.display_name, r.id AS role_id, r.name AS role_name
       FROM team_members tm JOIN users u ON u.id = tm.user_id JOIN roles r ON r.id = tm.role_id
      WHERE tm.team_id IN (?) AND ${visibleMembers.where} ORDER BY lower(u.email), u.id`,
    [ids, ...visibleMembers.params],
  );
  const clients = await sql<TeamClientRow>(
    em,
    `SELECT tc.team_id, c.id AS client_id, c.name, c.slug FROM team_clients tc JOIN clients c ON c.id = tc.client_id
      WHERE tc.team_id IN (?) ORDER BY lower(c.name), c.id`,
    [ids],
  );
  return teams.map((t) => ({
    id: t.id,
    name: t.name,
    description: t.description,
    members: members.filter((m) => m.team_id === t.id).map(({ team_id: _t, ...m }) => m),
    clients: clients
      .filter((c) => c.team_id === t.id && canSee(visible, c.client_id))
      .map(({ team_id: _t, ...c }) => c),
    created_at: iso(t.created_at),
    updated_at: iso(t.updated_at),
  }));
}

const findTeam = (em: EntityManager, id: string, lock = false): Promise<TeamRow> =>
  findById<TeamRow>(em, 'teams', TEAM_COLUMNS, id, 'team', lock);

async function teamDetail(em: EntityManager, ctx: CallerContext, id: string): Promise<Team> {
  const [team] = await withMembers(em, ctx, [await findTeam(em, id)]);
  if (!team) throw new DomainError('not_found', 'team not found');
  return team;
}

const teamClientIds = async (em: EntityManager, teamId: string): Promise<string[]> =>
  (await sql<{ client_id: string }>(em, `SELECT client_id FROM team_clients WHERE team_id = ?`, [teamId])).map(
    (r) => r.client_id,
  );

/** Changing a team changes access on every client it is linked to: the caller needs `permission` on each of them. */
async function guardTeam(em: EntityManager, ctx: CallerContext, teamId: string, permission: string): Promise<string[]> {
  const clients = await teamClientIds(em, teamId);
  requireOnEvery(ctx, permission, clients, 'this team');
  return clients;
}

const DUPLICATE_NAME = 'a team with this name already exists';

export function teamHandlers(deps: IdentityDeps): IdentityHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.identity.teams.list': async ({ page, per_page }, { ctx }) => {
      requirePermission(ctx, 'teams:read');
      const em = fork();
      const visible = visibleTeamsSql(visibleClients(ctx, ['teams:read']), 't');
      return pageOf(
        em,
        {
          columns: TEAM_COLUMNS,
          from: `teams t WHERE ${visible.where}`,
          params: visible.params,
          order: 'lower(name), id',
        },
        { page, per_page },
        (rows: TeamRow[]) => withMembers(em, ctx, rows),
      );
    },

    'svc.identity.teams.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'teams:read');
      const em = fork();
      // A team out of the caller's view is not found, as if it did not exist.
      const visible = visibleTeamsSql(visibleClients(ctx, ['teams:read']), 't');
      const [seen] = await sql<{ id: string }>(em, `SELECT t.id FROM teams t WHERE t.id = ? AND ${visible.where}`, [
        id,
        ...visible.params,
      ]);
      if (!seen) throw new DomainError('not_found', 'team not found');
      return teamDetail(em, ctx, id);
    },

    'svc.identity.teams.create': async ({ name, description }, { ctx }) => {
      requirePermission(ctx, 'teams:write');
      const id = randomUUID();
      const em = fork();
      await conflictOnDuplicate(DUPLICATE_NAME, () =>
        sql(em, `INSERT INTO teams (id, name, description) VALUES (?, ?, ?)`, [id, name, description]),
      );
      await deps.audit.record(ctx, {
        action: 'team.created',
        resource_type: 'team',
        resource_id: id,
        // A new team reaches no client yet.
        client_ids: [],
        details: { name, description },
      });
      return teamDetail(em, ctx, id);
    },

    'svc.identity.teams.update': async (input, { ctx }) => {
      requirePermission(ctx, 'teams:write');
      const changes = await fork().transactional(async (tx) => {
        const team = await findTeam(tx, input.id, true);
        await guardTeam(tx, ctx, team.id, 'teams:write');
        const changes: Record<string, { from: string; to: string }> = {};
        if (input.name !== undefined && input.name !== team.name) changes.name = { from: team.name, to: input.name };
        if (input.description !== undefined && input.description !== team.description)
          changes.description = { from: team.description, to: input.description };
        if (Object.keys(changes).length > 0)
          await conflictOnDuplicate(DUPLICATE_NAME, () =>
            sql(
              tx,
              `UPDATE teams SET name = COALESCE(?, name), description = COALESCE(?, description), updated_at = now() WHERE id = ?`,
              [changes.name ? input.name : null, changes.description ? input.description : null, input.id],
            ),
          );
        return changes;
      });
      if (Object.keys(changes).length > 0)
        await deps.audit.record(ctx, {
          action: 'team.updated',
          resource_type: 'team',
          resource_id: input.id,
          // A team's changes concern every client it reaches.
          client_ids: await teamClientIds(fork(), input.id),
          details: { changes },
        });
      return teamDetail(fork(), ctx, input.id);
    },

    'svc.identity.teams.delete': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'teams:delete');
      const { team, members, clients } = await fork().transactional(async (tx) => {
        const team = await findTeam(tx, id, true);
        const clients = await guardTeam(tx, ctx, id, 'teams:delete');
        const members = (
          await sql<{ user_id: string }>(tx, `SELECT user_id FROM team_members WHERE team_id = ?`, [id])
        ).map((m) => m.user_id);
        // Memberships and client links go with the team (ON DELETE CASCADE).
        await sql(tx, `DELETE FROM teams WHERE id = ?`, [id]);
        return { team, members, clients };
      });
      await deps.access.invalidateUsers(members);
      await deps.audit.record(ctx, {
        action: 'team.deleted',
        resource_type: 'team',
        resource_id: id,
        client_ids: clients,
        details: { name: team.name, member_ids: members, client_ids: clients },
      });
      return {};
    },

    'svc.identity.teams.members.add': async ({ team_id, user_id, role_id }, { ctx }) => {
      requirePermission(ctx, 'teams:write');
      const role = await fork().transactional(async (tx) => {
        await findTeam(tx, team_id, true);
        const clients = await guardTeam(tx, ctx, team_id, 'teams:write');
        const [user] = await sql<{ id: string }>(tx, `SELECT id FROM users WHERE id = ?`, [user_id]);
        if (!user) throw new DomainError('not_found', 'user not found');
        const role = await findRole(tx, role_id);
        // A membership grants the role on every client of the team.
        assertCanGrant(ctx, role.permissions, clients);
        await conflictOnDuplicate('the user is already a member of this team; change the role with PUT', () =>
          sql(tx, `INSERT INTO team_members (team_id, user_id, role_id) VALUES (?, ?, ?)`, [team_id, user_id, role_id]),
        );
        return role;
      });
      await deps.access.invalidateUsers([user_id]);
      await deps.audit.record(ctx, {
        action: 'team.member.added',
        resource_type: 'team',
        resource_id: team_id,
        client_ids: await teamClientIds(fork(), team_id),
        details: { user_id, role_id, role_name: role.name },
      });
      return teamDetail(fork(), ctx, team_id);
    },

    'svc.identity.teams.members.update': async ({ team_id, user_id, role_id, sent }, { ctx }) => {
      requirePermission(ctx, 'teams:write');
      const { role, previous } = await fork().transactional(async (tx) => {
        await findTeam(tx, team_id, true);
        const clients = await guardTeam(tx, ctx, team_id, 'teams:write');
        const [member] = await sql<{ role_id: string }>(
          tx,
          `SELECT role_id FROM team_members WHERE team_id = ? AND user_id = ?`,
          [team_id, user_id],
        );
        if (!member) throw new DomainError('not_found', 'the user is not a member of this team');
        refuseChanges(sent, { user_id }, TEAM_MEMBER_IMMUTABLE);
        const role = await findRole(tx, role_id);
        assertCanGrant(ctx, role.permissions, clients);
        await sql(tx, `UPDATE team_members SET role_id = ? WHERE team_id = ? AND user_id = ?`, [
          role_id,
          team_id,
          user_id,
        ]);
        return { role, previous: member.role_id };
      });
      await deps.access.invalidateUsers([user_id]);
      await deps.audit.record(ctx, {
        action: 'team.member.updated',
        resource_type: 'team',
        resource_id: team_id,
        client_ids: await teamClientIds(fork(), team_id),
        details: { user_id, from_role_id: previous, to_role_id: role_id, role_name: role.name },
      });
      return teamDetail(fork(), ctx, team_id);
    },

    'svc.identity.teams.members.remove': async ({ team_id, user_id }, { ctx }) => {
      requirePermission(ctx, 'teams:write');
      const em = fork();
      await findTeam(em, team_id);
      await guardTeam(em, ctx, team_id, 'teams:write');
      const removed = await sql<{ role_id: string }>(
        em,
        `DELETE FROM team_members WHERE team_id = ? AND user_id = ? RETURNING role_id`,
        [team_id, user_id],
      );
      if (removed.length === 0) throw new DomainError('not_found', 'the user is not a member of this team');
      await deps.access.invalidateUsers([user_id]);
      await deps.audit.record(ctx, {
        action: 'team.member.removed',
        resource_type: 'team',
        resource_id: team_id,
        client_ids: await teamClientIds(fork(), team_id),
        details: { user_id, role_id: removed[0]?.role_id },
      });
      return {};
    },

    'svc.identity.teams.clients.add': async ({ team_id, client_id }, { ctx }) => {
      requirePermission(ctx, 'teams:write', client_id);
      const members = await fork().transactional(async (tx) => {
        await findTeam(tx, team_id, true);
        await findClient(tx, client_id);
        // Linking a client grants every member's role on it: the caller must hold each of those roles' permissions there.
        // The roles are share-locked as findRole does, against a concurrent edit of one of them; the team lock above
        // keeps the members themselves from changing meanwhile.
        const roles = await sql<{ user_id: string; permissions: string[] }>(
          tx,
          `SELECT tm.user_id, r.permissions FROM team_members tm JOIN roles r ON r.id = tm.role_id WHERE tm.team_id = ?
             FOR SHARE OF r`,
          [team_id],
        );
        assertCanGrant(ctx, [...new Set(roles.flatMap((r) => r.permissions))], [client_id]);
        await conflictOnDuplicate('the client is already linked to this team', () =>
          sql(tx, `INSERT INTO team_clients (team_id, client_id) VALUES (?, ?)`, [team_id, client_id]),
        );
        return roles.map((r) => r.user_id);
      });
      await deps.access.invalidateUsers(members);
      await deps.access.invalidateTeam(team_id);
      await deps.audit.record(ctx, {
        action: 'team.client.added',
        resource_type: 'team',
        resource_id: team_id,
        // The link changes access to that client alone.
        client_ids: [client_id],
        details: { client_id },
      });
      return teamDetail(fork(), ctx, team_id);
    },

    'svc.identity.teams.clients.remove': async ({ team_id, client_id }, { ctx }) => {
      requirePermission(ctx, 'teams:write', client_id);
      const em = fork();
      await findTeam(em, team_id);
      const removed = await sql<{ client_id: string }>(
        em,
        `DELETE FROM team_clients WHERE team_id = ? AND client_id = ? RETURNING client_id`,
        [team_id, client_id],
      );
      if (removed.length === 0) throw new DomainError('not_found', 'the client is not linked to this team');
      await deps.access.invalidateTeam(team_id);
      await deps.audit.record(ctx, {
        action: 'team.client.removed',
        resource_type: 'team',
        resource_id: team_id,
        client_ids: [client_id],
        details: { client_id },
      });
      return {};
    },
  };
}
