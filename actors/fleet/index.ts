import type { DomainContext, DomainHandle, DomainModule } from '../domain.ts';
import { AccessResolver } from '../identity/access.ts';
import { AuditRecorder } from '../runtime/audit.ts';
import { clientHandlers } from './clients.ts';
import { startMetricsIngest } from './metrics/ingest.ts';
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
    // One directory for every telemetry consumer: they share its cache of agent → host and tenant.
    const directory = new AgentDirectory(orm);
    await dc.host.serve('fleet', 'fleet-clients', clientHandlers({ orm, access, audit }));
    const metrics = await startMetricsIngest({ nc: dc.nc, directory, tsdb: dc.stores.tsdb(), log: dc.log });
    return { stop: () => metrics.stop() };
  },
};
