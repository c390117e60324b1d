import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, type IdentityHandler } from '../common.ts';
import { recordTeam } from './audit.ts';
import { findTeam } from './team-row.ts';

export const removeTeamClient =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.clients.remove'> =>
  async ({ team_id, client_id }, { ctx }) => {
    requirePermission(ctx, 'teams:write', client_id);
    const em = deps.orm.em.fork();
    await findTeam(em, team_id);
    const removed = await sql<{ client_id: string }>(
      em,
      `DELETE FROM team_clients WHERE team_id = ? AND client_id = ? RETURNING client_id`,
      [team_id, client_id],
    );
    if (removed.length === 0) throw new DomainError('not_found', 'the client is not linked to this team');
    await deps.access.invalidateTeam(team_id);
    await recordTeam(deps, ctx, 'team.client.removed', team_id, [client_id], { client_id });
    return {};
  };
