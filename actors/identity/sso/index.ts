import type { DomainContext, DomainHandle } from '../../domain.ts';
import type { IdentityDeps } from '../deps.ts';

export async function startSsoActor(_deps: IdentityDeps, _dc: DomainContext): Promise<DomainHandle> {
  return { stop: async () => undefined };
}
