import type { IdentityDeps } from '../deps.ts';
import type { IdentityHandlers } from './common.ts';
import { assignClient } from './users/assign-client.ts';
import { createUser } from './users/create.ts';
import { disableUser } from './users/disable.ts';
import { getUser } from './users/get.ts';
import { listUserClients } from './users/list-clients.ts';
import { listUsers } from './users/list.ts';
import { removeClient } from './users/remove-client.ts';
import { resendInvite } from './users/resend-invite.ts';
import { resetPassword } from './users/reset-password.ts';
import { updateClient } from './users/update-client.ts';
import { updateUser } from './users/update.ts';

/** Users and their direct client assignments; each subject's handler lives in users/, in the file named after it. */
export function userHandlers(deps: IdentityDeps): IdentityHandlers {
  return {
    'svc.identity.users.list': listUsers(deps),
    'svc.identity.users.get': getUser(deps),
    'svc.identity.users.create': createUser(deps),
    'svc.identity.users.update': updateUser(deps),
    'svc.identity.users.disable': disableUser(deps),
    'svc.identity.users.resend_invite': resendInvite(deps),
    'svc.identity.users.reset_password': resetPassword(deps),

    // Direct client assignments
    'svc.identity.users.clients.list': listUserClients(deps),
    'svc.identity.users.clients.assign': assignClient(deps),
    'svc.identity.users.clients.update': updateClient(deps),
    'svc.identity.users.clients.remove': removeClient(deps),
  };
}
