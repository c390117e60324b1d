import type { UserName } from '../../contracts/domains/identity-lookup.ts';
import type { Handlers } from '../../platform/serve.ts';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import { sql } from '../../platform/stores/sql.ts';
import type { IdentityDeps } from './deps.ts';

/** Display names for other domains (contracts/domains/identity-lookup.ts): ids in, what exists out. */
export function userLookupHandlers(deps: Pick<IdentityDeps, 'orm'>): Handlers<SystemCatalogue, 'identity'> {
  return {
    'svc.identity.lookup.user_names': async ({ user_ids }) => ({
      users: await sql<UserName>(deps.orm.em.fork(), `SELECT id, display_name, email FROM users WHERE id IN (?)`, [
        user_ids,
      ]),
    }),
  };
}
