import type { DomainContext, DomainHandle, DomainModule } from '../domain.ts';
import { AccessResolver } from '../identity/access.ts';
import { AuditRecorder } from '../runtime/audit.ts';
import { clientHandlers } from './clients.ts';

/** Fleet: clients, environments, hosts and their agents. */
export const fleetDomain: DomainModule = {
  name: 'fleet',
  async start(dc: DomainContext): Promise<DomainHandle> {
    const orm = await dc.stores.orm();
    const kv = await dc.stores.kv();
    // The identity access cache lives in the shared key-value store: fleet drops entries a client deletion makes stale.
    const access = new AccessResolver(() => orm.em.fork(), kv, dc.clock);
    const audit = new AuditRecorder(dc.nc, dc.clock);
    await dc.host.serve('fleet', 'fleet-clients', clientHandlers({ orm, access, audit }));
    return { stop: async () => undefined };
  },
};
