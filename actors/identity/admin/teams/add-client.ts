import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { assertCanGrant, conflictOnDuplicate, findClient, sql, type IdentityHandler } from '../common.ts';
import { recordTeam } from './audit.ts';
import { teamDetail } from './detail.ts';
import { findTeam } from './team-row.ts';

export const addTeamClient =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.clients.add'> =>
  async ({ team_id, client_id }, { ctx }) => {
    requirePermission(ctx, 'teams:write', client_id);
    const members = await deps.orm.em.fork().transactional(async (tx) => {
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
    // The link changes access to that client alone.
    await recordTeam(deps, ctx, 'team.client.added', team_id, [client_id], { client_id });
    return teamDetail(deps.orm.em.fork(), ctx, team_id);
  };
