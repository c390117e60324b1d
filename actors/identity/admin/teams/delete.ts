import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, type IdentityHandler } from '../common.ts';
import { recordTeam } from './audit.ts';
import { findTeam, guardTeam } from './team-row.ts';

export const deleteTeam =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.delete'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'teams:delete');
    const { team, members, clients } = await deps.orm.em.fork().transactional(async (tx) => {
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
    await recordTeam(deps, ctx, 'team.deleted', id, clients, {
      name: team.name,
      member_ids: members,
      client_ids: clients,
    });
    return {};
  };
