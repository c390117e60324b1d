import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { conflictOnDuplicate, grantableRole, sql, type IdentityHandler } from '../common.ts';
import { recordTeamChange } from './audit.ts';
import { teamDetail } from './detail.ts';
import { findTeam, guardTeam } from './team-row.ts';

export const addMember =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.members.add'> =>
  async ({ team_id, user_id, role_id }, { ctx }) => {
    requirePermission(ctx, 'teams:write');
    const role = await deps.orm.em.fork().transactional(async (tx) => {
      await findTeam(tx, team_id, true);
      const clients = await guardTeam(tx, ctx, team_id, 'teams:write');
      const [user] = await sql<{ id: string }>(tx, `SELECT id FROM users WHERE id = ?`, [user_id]);
      if (!user) throw new DomainError('not_found', 'user not found');
      // A membership grants the role on every client of the team.
      const role = await grantableRole(tx, ctx, role_id, clients);
      await conflictOnDuplicate('the user is already a member of this team; change the role with PUT', () =>
        sql(tx, `INSERT INTO team_members (team_id, user_id, role_id) VALUES (?, ?, ?)`, [team_id, user_id, role_id]),
      );
      return role;
    });
    await deps.access.invalidateUsers([user_id]);
    await recordTeamChange(deps, ctx, 'team.member.added', team_id, { user_id, role_id, role_name: role.name });
    return teamDetail(deps.orm.em.fork(), ctx, team_id);
  };
