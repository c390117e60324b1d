import type { DomainContext, DomainHandle } from '../../../platform/domain.ts';
import type { IdentityDeps } from '../deps.ts';
import { SsoFlow } from './flow.ts';
import { OidcProvider } from './provider.ts';

/**
 * The single sign-on actor. `svc.identity.sso.config` is always served (the login page asks whether SSO is on);
 * start, callback and exchange only when an SSO client id is configured, like the gateway routes in front of them.
 */
export async function startSsoActor(deps: IdentityDeps, domain: DomainContext): Promise<DomainHandle> {
  const enabled = deps.config.SVC_SSO_CLIENT_ID !== '';
  const log = deps.log.child({ actor: 'identity-sso' });
  if (!enabled) {
    await domain.host.serve('identity', 'identity-sso', {
      'svc.identity.sso.config': async () => ({ sso_enabled: false }),
    });
    return { stop: async () => undefined };
  }
  const flow = new SsoFlow({ ...deps, log }, new OidcProvider(deps.config, log));
  await domain.host.serve('identity', 'identity-sso', {
    'svc.identity.sso.config': async () => ({ sso_enabled: true }),
    'svc.identity.sso.start': async () => flow.start(),
    'svc.identity.sso.callback': async (input, { ctx }) => flow.callback(input, ctx),
    'svc.identity.sso.exchange': async ({ code }) => flow.exchange(code),
  });
  return { stop: async () => undefined };
}
