import type { IdentityDeps } from '../deps.ts';
import type { IdentityHandlers } from './common.ts';
import { createRole } from './roles/create.ts';
import { deleteRole } from './roles/delete.ts';
import { getRole } from './roles/get.ts';
import { listPermissions } from './roles/list-permissions.ts';
import { listRoles } from './roles/list.ts';
import { updateRole } from './roles/update.ts';
import { roleUsage } from './roles/usage.ts';

/** Roles and the permission registry; each subject's handler lives in roles/, in the file named after it. */
export function roleHandlers(deps: IdentityDeps): IdentityHandlers {
  return {
    'svc.identity.roles.list': listRoles(deps),
    'svc.identity.roles.get': getRole(deps),
    'svc.identity.roles.create': createRole(deps),
    'svc.identity.roles.update': updateRole(deps),
    'svc.identity.roles.delete': deleteRole(deps),
    'svc.identity.roles.usage': roleUsage(deps),
    'svc.identity.permissions.list': listPermissions(),
  };
}
