import { requirePermission } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import type { IdentityDeps } from '../../deps.ts';
import { sql, visibleClients, visibleTeamsSql, type IdentityHandler } from '../common.ts';
import { teamDetail } from './detail.ts';

export const getTeam =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.get'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'teams:read');
    const em = deps.orm.em.fork();
    // A team out of the caller's view is not found, as if it did not exist.
    const visible = visibleTeamsSql(visibleClients(ctx, ['teams:read']), 't');
    const [seen] = await sql<{ id: string }>(em, `SELECT t.id FROM teams t WHERE t.id = ? AND ${visible.where}`, [
      id,
      ...visible.params,
    ]);
    if (!seen) throw new DomainError('not_found', 'team not found');
    return teamDetail(em, ctx, id);
  };
