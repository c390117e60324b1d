import type { DomainContext, DomainHandle, DomainModule } from '../domain.ts';
import { AccessResolver } from '../identity/access.ts';
import { AuditRecorder } from '../runtime/audit.ts';
import { clientHandlers } from './clients.ts';
import { startInventoryIngest } from './inventory/ingest.ts';
import { integrationHandlers } from './inventory/integration-reads.ts';
import { inventoryHandlers } from './inventory/reads.ts';
import { AgentDirectory } from './telemetry/consume.ts';

/** Fleet: clients, environments, hosts and their agents. */
export const fleetDomain: DomainModule = {
  name: 'fleet',
  async start(dc: DomainContext): Promise<DomainHandle> {
    const orm = await dc.stores.orm();
    const kv = await dc.stores.kv();
    // The identity access cache lives in the shared key-value store: fleet drops entries a client deletion makes stale.
    const access = new AccessResolver(() => orm.em.fork(), kv, dc.clock);
    const audit = new AuditRecorder(dc.nc, dc.clock);
    // One directory for every telemetry consumer of this process: an agent is looked up once, whatever it sends.
    const directory = new AgentDirectory(orm);
    await dc.host.serve('fleet', 'fleet-clients', clientHandlers({ orm, access, audit }));
    await dc.host.serve('fleet', 'fleet-inventory', inventoryHandlers({ orm }));
    await dc.host.serve('fleet', 'fleet-integrations', integrationHandlers({ orm }));
    const inventory = await startInventoryIngest({ nc: dc.nc, orm, directory, clock: dc.clock, log: dc.log.child({ actor: 'fleet-inventory-ingest' }) });
    return { stop: () => inventory.stop() };
  },
};
