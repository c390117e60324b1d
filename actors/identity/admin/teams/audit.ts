import type { CallerContext } from '../../../../contracts/context.ts';
import type { IdentityDeps } from '../../deps.ts';
import { teamClientIds } from './team-row.ts';

/** An audit entry about a team that names `clientIds`. */
export const recordTeam = (
  deps: IdentityDeps,
  ctx: CallerContext,
  action: string,
  teamId: string,
  clientIds: readonly string[],
  details: Record<string, unknown>,
): Promise<void> =>
  deps.audit.record(ctx, { action, resource_type: 'team', resource_id: teamId, client_ids: clientIds, details });

/** An audit entry about a change to a team (or its members): it concerns every client the team reaches. */
export const recordTeamChange = async (
  deps: IdentityDeps,
  ctx: CallerContext,
  action: string,
  teamId: string,
  details: Record<string, unknown>,
): Promise<void> => recordTeam(deps, ctx, action, teamId, await teamClientIds(deps.orm.em.fork(), teamId), details);
