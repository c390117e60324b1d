import type { DomainContext, DomainHandle, DomainModule } from '../../platform/domain.ts';
import { requireSecrets } from '../../platform/config.ts';
import { identityEntities } from './entities.ts';
import { AccessResolver } from './access.ts';
import { AuditRecorder, startAuditStore } from './audit.ts';
import { clientRemovedHandler } from './client-removed.ts';
import { AccessTokens, SecretBox } from './crypto.ts';
import type { IdentityDeps } from './deps.ts';
import { PasswordHasher } from './passwords.ts';
import { seedIdentity } from './seed.ts';
import { startAdminActors } from './admin/index.ts';
import { startSessionActors } from './session/index.ts';
import { startSsoActor } from './sso/index.ts';
import { userLookupHandlers } from './user-lookup.ts';

/** Builds what every identity actor shares. */
export async function identityDeps(domain: DomainContext): Promise<IdentityDeps> {
  const secrets = requireSecrets(domain.config, ['SVC_JWT_SECRET', 'SVC_MFA_ENCRYPTION_KEY']);
  const orm = await domain.stores.orm();
  const kv = await domain.stores.kv();
  const reads = await domain.stores.kvReads();
  const hasher = new PasswordHasher();
  // The dummy hash exists before the first login, so an unknown e-mail never costs more than a wrong password.
  await hasher.warm();
  return {
    config: domain.config,
    log: domain.log,
    orm,
    kv,
    nc: domain.nc,
    clock: domain.clock,
    hasher,
    tokens: new AccessTokens(secrets.SVC_JWT_SECRET, domain.config.SVC_JWT_ACCESS_TTL, () => domain.clock.now()),
    box: new SecretBox(secrets.SVC_MFA_ENCRYPTION_KEY),
    access: new AccessResolver(() => orm.em.fork(), kv, domain.clock, reads),
    audit: new AuditRecorder(domain.nc, domain.clock),
  };
}

/** Identity and access: session, access resolver, admin and audit actors. */
export const identityDomain: DomainModule = {
  name: 'identity',
  entities: identityEntities,
  async start(domain: DomainContext): Promise<DomainHandle> {
    const deps = await identityDeps(domain);
    await seedIdentity(deps);
    await domain.host.serve('identity', 'identity-access', {
      'svc.identity.access.resolve': async ({ user_id }) => deps.access.resolveUser(user_id),
      'svc.identity.access.resolve_key': async ({ api_key }) => deps.access.resolveApiKey(api_key),
      'svc.identity.access.client_removed': clientRemovedHandler(deps),
    });
    await domain.host.serve('identity', 'identity-lookup', userLookupHandlers(deps));
    const background = [
      await startAuditStore(domain.nc, deps.orm, deps.log),
      await startSessionActors(deps, domain),
      await startSsoActor(deps, domain),
      await startAdminActors(deps, domain),
    ];
    return {
      stop: async () => {
        await Promise.all(background.map((b) => b.stop()));
      },
    };
  },
};
