import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { conflictOnDuplicate, sql, type IdentityHandler } from '../common.ts';
import { recordTeamChange } from './audit.ts';
import { teamDetail } from './detail.ts';
import { DUPLICATE_NAME, findTeam, guardTeam } from './team-row.ts';

export const updateTeam =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.update'> =>
  async (input, { ctx }) => {
    requirePermission(ctx, 'teams:write');
    const changes = await deps.orm.em.fork().transactional(async (tx) => {
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
    if (Object.keys(changes).length > 0) await recordTeamChange(deps, ctx, 'team.updated', input.id, { changes });
    return teamDetail(deps.orm.em.fork(), ctx, input.id);
  };
