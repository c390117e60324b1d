import type { IdentityDeps } from '../deps.ts';
import type { IdentityHandlers } from './common.ts';
import { createServiceAccount } from './service-accounts/create.ts';
import { deleteServiceAccount } from './service-accounts/delete.ts';
import { getServiceAccount } from './service-accounts/get.ts';
import { listServiceAccounts } from './service-accounts/list.ts';
import { updateServiceAccount } from './service-accounts/update.ts';

export { newApiKey } from './service-accounts/api-key.ts';

/** Service accounts (API keys); each subject's handler lives in service-accounts/, in the file named after it. */
export function serviceAccountHandlers(deps: IdentityDeps): IdentityHandlers {
  return {
    'svc.identity.service_accounts.list': listServiceAccounts(deps),
    'svc.identity.service_accounts.get': getServiceAccount(deps),
    'svc.identity.service_accounts.create': createServiceAccount(deps),
    'svc.identity.service_accounts.update': updateServiceAccount(deps),
    'svc.identity.service_accounts.delete': deleteServiceAccount(deps),
  };
}
