import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { pageOf, visibleClients, visibleTeamsSql, type IdentityHandler } from '../common.ts';
import { withMembers } from './detail.ts';
import { TEAM_COLUMNS, type TeamRow } from './team-row.ts';

export const listTeams =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.list'> =>
  async ({ page, per_page }, { ctx }) => {
    requirePermission(ctx, 'teams:read');
    const em = deps.orm.em.fork();
    const visible = visibleTeamsSql(visibleClients(ctx, ['teams:read']), 't');
    return pageOf(
      em,
      {
        columns: TEAM_COLUMNS,
        from: `teams t WHERE ${visible.where}`,
        params: visible.params,
        order: 'lower(name), id',
      },
      { page, per_page },
      (rows: TeamRow[]) => withMembers(em, ctx, rows),
    );
  };
