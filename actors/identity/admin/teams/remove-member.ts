import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, type IdentityHandler } from '../common.ts';
import { recordTeamChange } from './audit.ts';
import { findTeam, guardTeam } from './team-row.ts';

export const removeMember =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.members.remove'> =>
  async ({ team_id, user_id }, { ctx }) => {
    requirePermission(ctx, 'teams:write');
    const em = deps.orm.em.fork();
    await findTeam(em, team_id);
    await guardTeam(em, ctx, team_id, 'teams:write');
    const removed = await sql<{ role_id: string }>(
      em,
      `DELETE FROM team_members WHERE team_id = ? AND user_id = ? RETURNING role_id`,
      [team_id, user_id],
    );
    if (removed.length === 0) throw new DomainError('not_found', 'the user is not a member of this team');
    await deps.access.invalidateUsers([user_id]);
    await recordTeamChange(deps, ctx, 'team.member.removed', team_id, { user_id, role_id: removed[0]?.role_id });
    return {};
  };
