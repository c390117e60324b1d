import type { IdentityDeps } from '../deps.ts';
import type { IdentityHandlers } from './common.ts';
import { addTeamClient } from './teams/add-client.ts';
import { addMember } from './teams/add-member.ts';
import { createTeam } from './teams/create.ts';
import { deleteTeam } from './teams/delete.ts';
import { getTeam } from './teams/get.ts';
import { listTeams } from './teams/list.ts';
import { removeTeamClient } from './teams/remove-client.ts';
import { removeMember } from './teams/remove-member.ts';
import { updateMember } from './teams/update-member.ts';
import { updateTeam } from './teams/update.ts';

/** Teams, their members and their clients; each subject's handler lives in teams/, in the file named after it. */
export function teamHandlers(deps: IdentityDeps): IdentityHandlers {
  return {
    'svc.identity.teams.list': listTeams(deps),
    'svc.identity.teams.get': getTeam(deps),
    'svc.identity.teams.create': createTeam(deps),
    'svc.identity.teams.update': updateTeam(deps),
    'svc.identity.teams.delete': deleteTeam(deps),
    'svc.identity.teams.members.add': addMember(deps),
    'svc.identity.teams.members.update': updateMember(deps),
    'svc.identity.teams.members.remove': removeMember(deps),
    'svc.identity.teams.clients.add': addTeamClient(deps),
    'svc.identity.teams.clients.remove': removeTeamClient(deps),
  };
}
