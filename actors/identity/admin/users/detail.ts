import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import type { UserDetail } from '../../../../contracts/domains/identity-admin.ts';
import { iso, sql, visibleClients, visibleTeamsSql } from '../common.ts';
import { assignmentsOf } from './assignments.ts';
import { findUser, summary } from './user-row.ts';

/** A user with its teams and direct assignments, each limited to what the caller may see of them. */
export async function detail(em: EntityManager, ctx: CallerContext, id: string): Promise<UserDetail> {
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
