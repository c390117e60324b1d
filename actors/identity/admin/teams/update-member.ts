import { requirePermission } from '../../../../contracts/access.ts';
import { TEAM_MEMBER_IMMUTABLE } from '../../../../contracts/domains/identity-admin.ts';
import { refuseChanges } from '../../../../contracts/immutable.ts';
import type { IdentityDeps } from '../../deps.ts';
import { changeRole, type IdentityHandler } from '../common.ts';
import { recordTeamChange } from './audit.ts';
import { teamDetail } from './detail.ts';
import { findTeam, guardTeam } from './team-row.ts';

export const updateMember =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.members.update'> =>
  async ({ team_id, user_id, role_id, sent }, { ctx }) => {
    requirePermission(ctx, 'teams:write');
    const { role, previous } = await deps.orm.em.fork().transactional(async (tx) => {
      await findTeam(tx, team_id, true);
      const clients = await guardTeam(tx, ctx, team_id, 'teams:write');
      return changeRole(
        tx,
        ctx,
        {
          table: 'team_members',
          where: 'team_id = ? AND user_id = ?',
          params: [team_id, user_id],
          forUpdate: false,
          missing: 'the user is not a member of this team',
        },
        role_id,
        clients,
        () => refuseChanges(sent, { user_id }, TEAM_MEMBER_IMMUTABLE),
      );
    });
    await deps.access.invalidateUsers([user_id]);
    await recordTeamChange(deps, ctx, 'team.member.updated', team_id, {
      user_id,
      from_role_id: previous,
      to_role_id: role_id,
      role_name: role.name,
    });
    return teamDetail(deps.orm.em.fork(), ctx, team_id);
  };
