import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { conflictOnDuplicate, sql, type IdentityHandler } from '../common.ts';
import { recordTeam } from './audit.ts';
import { teamDetail } from './detail.ts';
import { DUPLICATE_NAME } from './team-row.ts';

export const createTeam =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.teams.create'> =>
  async ({ name, description }, { ctx }) => {
    requirePermission(ctx, 'teams:write');
    const id = randomUUID();
    const em = deps.orm.em.fork();
    await conflictOnDuplicate(DUPLICATE_NAME, () =>
      sql(em, `INSERT INTO teams (id, name, description) VALUES (?, ?, ?)`, [id, name, description]),
    );
    // A new team reaches no client yet.
    await recordTeam(deps, ctx, 'team.created', id, [], { name, description });
    return teamDetail(em, ctx, id);
  };
