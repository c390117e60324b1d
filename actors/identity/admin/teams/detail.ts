import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import type { Team } from '../../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { canSee, iso, sql, visibleClients, visibleUsersSql } from '../common.ts';
import { findTeam, type TeamRow } from './team-row.ts';

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
export async function withMembers(em: EntityManager, ctx: CallerContext, teams: TeamRow[]): Promise<Team[]> {
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

export async function teamDetail(em: EntityManager, ctx: CallerContext, id: string): Promise<Team> {
  const [team] = await withMembers(em, ctx, [await findTeam(em, id)]);
  if (!team) throw new DomainError('not_found', 'team not found');
  return team;
}
