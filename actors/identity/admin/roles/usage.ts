import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import {
  canSee,
  sql,
  visibleClients,
  visibleServiceAccountsSql,
  visibleTeamsSql,
  visibleUsersSql,
  type IdentityHandler,
} from '../common.ts';
import { findRoleRow } from './role-row.ts';

export const roleUsage =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.roles.usage'> =>
  async ({ id }, { ctx }) => {
    requirePermission(ctx, 'roles:read');
    const em = deps.orm.em.fork();
    await findRoleRow(em, id);
    const visible = visibleClients(ctx, ['roles:read']);
    const users = (
      await sql<{
        user_id: string;
        email: string;
        display_name: string;
        client_id: string;
        client_name: string;
        client_slug: string;
      }>(
        em,
        `SELECT u.id AS user_id, u.email, u.display_name, c.id AS client_id, c.name AS client_name, c.slug AS client_slug
             FROM user_client_roles ucr JOIN users u ON u.id = ucr.user_id JOIN clients c ON c.id = ucr.client_id
            WHERE ucr.role_id = ? ORDER BY lower(u.email), lower(c.name)`,
        [id],
      )
    ).filter((u) => canSee(visible, u.client_id));
    // Teams and members, and keys, as the teams and service-account views would show them to the caller.
    const visibleTeams = visibleTeamsSql(visible, 't');
    const visibleMembers = visibleUsersSql(visible, 'u');
    const memberships = await sql<{
      team_id: string;
      team_name: string;
      user_id: string;
      email: string;
      display_name: string;
    }>(
      em,
      `SELECT t.id AS team_id, t.name AS team_name, u.id AS user_id, u.email, u.display_name
           FROM team_members tm JOIN teams t ON t.id = tm.team_id JOIN users u ON u.id = tm.user_id
          WHERE tm.role_id = ? AND ${visibleTeams.where} AND ${visibleMembers.where}
          ORDER BY lower(t.name), t.id, lower(u.email)`,
      [id, ...visibleTeams.params, ...visibleMembers.params],
    );
    const teams = new Map<
      string,
      { team_id: string; team_name: string; members: { user_id: string; email: string; display_name: string }[] }
    >();
    for (const m of memberships) {
      const team = teams.get(m.team_id) ?? { team_id: m.team_id, team_name: m.team_name, members: [] };
      team.members.push({ user_id: m.user_id, email: m.email, display_name: m.display_name });
      teams.set(m.team_id, team);
    }
    const visibleKeys = visibleServiceAccountsSql(visible, 'sa');
    const service_accounts = await sql<{ id: string; name: string; is_active: boolean }>(
      em,
      `SELECT sa.id, sa.name, sa.is_active FROM service_accounts sa WHERE sa.role_id = ? AND ${visibleKeys.where}
          ORDER BY lower(sa.name), sa.id`,
      [id, ...visibleKeys.params],
    );
    return { role_id: id, users, teams: [...teams.values()], service_accounts };
  };
