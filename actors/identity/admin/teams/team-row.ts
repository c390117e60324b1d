import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import { findById, requireOnEvery, sql } from '../common.ts';

export interface TeamRow {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export const TEAM_COLUMNS = 'id, name, description, created_at, updated_at';

export const DUPLICATE_NAME = 'a team with this name already exists';

export const findTeam = (em: EntityManager, id: string, lock = false): Promise<TeamRow> =>
  findById<TeamRow>(em, 'teams', TEAM_COLUMNS, id, 'team', lock);

export const teamClientIds = async (em: EntityManager, teamId: string): Promise<string[]> =>
  (await sql<{ client_id: string }>(em, `SELECT client_id FROM team_clients WHERE team_id = ?`, [teamId])).map(
    (r) => r.client_id,
  );

/** Changing a team changes access on every client it is linked to: the caller needs `permission` on each of them. */
export async function guardTeam(
  em: EntityManager,
  ctx: CallerContext,
  teamId: string,
  permission: string,
): Promise<string[]> {
  const clients = await teamClientIds(em, teamId);
  requireOnEvery(ctx, permission, clients, 'this team');
  return clients;
}
