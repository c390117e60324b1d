import type { DomainContext, DomainHandle, DomainModule } from '../domain.ts';

/** Fleet: clients, environments, hosts and their agents. */
export const fleetDomain: DomainModule = {
  name: 'fleet',
  async start(_dc: DomainContext): Promise<DomainHandle> {
    return { stop: async () => undefined };
  },
};
