import { AGENT_CONFIG_PREFIX, ConfigFetchRequest } from '../../contracts/domains/agent-telemetry.ts';
import type { DomainContext, DomainHandle, DomainModule } from '../../platform/domain.ts';
import { AuditRecorder } from '../../platform/audit.ts';
import { agentAdminHandlers } from './agents/admin.ts';
import { agentIssuer, enrolmentHandlers } from './agents/enrolment.ts';
import { AgentRevoker } from './agents/revocation.ts';
import { startAgentEventIngest, startHeartbeatIngest, startStaleSweeper } from './agents/status.ts';
import { configFetchHandler, watchConfigHandlers } from './agents/watch-config.ts';
import { clientHandlers } from './clients.ts';
import type { FleetDeps } from './deps.ts';
import { environmentHandlers } from './environments.ts';
import { hostHandlers } from './hosts.ts';
import { hostLookupHandlers } from './hosts-lookup.ts';
import { startInventoryIngest } from './inventory/ingest.ts';
import { integrationHandlers } from './inventory/integration-reads.ts';
import { upsertIntegrationsOfHosts } from './inventory/integrations-store.ts';
import { inventoryHandlers } from './inventory/reads.ts';
import { startMetricsIngest } from './metrics/ingest.ts';
import { metricsQueryHandlers } from './metrics/query-plan.ts';
import { metricsReadHandlers } from './metrics/reads.ts';
import { HostScopes } from './metrics/host-scopes.ts';
import { Tsdb } from './metrics/tsdb.ts';
import { tsdbBases } from '../../platform/config.ts';
import { fleetEntities } from './entities.ts';
import { searchHandlers } from './search/handlers.ts';
import { savedSearchHandlers } from './search/saved.ts';
import { AgentDirectory } from './telemetry/consume.ts';

/** Fleet: clients, environments, hosts, their agents (enrolment, telemetry, status, config) and inventory. */
export const fleetDomain: DomainModule = {
  name: 'fleet',
  entities: fleetEntities,
  async start(domain: DomainContext): Promise<DomainHandle> {
    const orm = await domain.stores.orm();
    const audit = new AuditRecorder(domain.nc, domain.clock);
    const log = domain.log;
    // Its own system-account connection, closed by stop (after the actor host has drained the requests using it).
    const revoker = await AgentRevoker.start(domain.config, log);
    // Agents' accounts import their subjects from the service account: its JWT must export them first.
    await revoker.agentAccounts?.ensureServiceExports();
    const issuer = await agentIssuer(domain.config, revoker.agentAccounts);
    const hostScopes = new HostScopes();
    // The metrics store is the fleet's: imports to the write base, queries to the read base.
    const tsdb = new Tsdb(tsdbBases(domain.config));
    const deps: FleetDeps = { orm, audit, revoker, hostScopes };
    try {
      await domain.host.serve('fleet', 'fleet-clients', { ...clientHandlers(deps), ...environmentHandlers(deps) });
      await domain.host.serve('fleet', 'fleet-hosts', hostHandlers(deps));
      await domain.host.serve('fleet', 'fleet-lookup', hostLookupHandlers({ orm }));
      await domain.host.serve('fleet', 'fleet-agents-admin', agentAdminHandlers(deps));
      await domain.host.serve(
        'fleet',
        'fleet-enrolment',
        enrolmentHandlers({ orm, audit, clock: domain.clock, config: domain.config }, issuer),
      );
      await domain.host.serve('fleet', 'fleet-watch-config', watchConfigHandlers({ orm, nc: domain.nc, audit, log }));
      await domain.host.serve('fleet', 'fleet-inventory', inventoryHandlers({ orm }));
      await domain.host.serve('fleet', 'fleet-integrations', integrationHandlers({ orm }));
      await domain.host.serve('fleet', 'fleet-metrics', {
        ...metricsReadHandlers({ orm, tsdb, clock: domain.clock, hostScopes }),
        ...metricsQueryHandlers({ orm, queryTimeoutMs: domain.config.SVC_METRICS_QUERY_TIMEOUT_MS }),
      });
      await domain.host.serve('fleet', 'fleet-search', {
        ...searchHandlers({ orm, timeoutMs: domain.config.SVC_SEARCH_TIMEOUT_MS }),
        ...savedSearchHandlers({ orm, audit }),
      });
      const fetchConfig = configFetchHandler({ orm, clock: domain.clock, config: domain.config, issuer });
      await domain.host.serveAgents({
        domain: 'fleet',
        name: 'fleet-agent-config',
        prefix: AGENT_CONFIG_PREFIX,
        request: ConfigFetchRequest,
        handler: (agentId) => fetchConfig(agentId),
      });

      // One directory for every telemetry consumer: they share its cache of agent → host and tenant.
      const directory = new AgentDirectory(orm);
      const statusDeps = {
        nc: domain.nc,
        orm,
        directory,
        clock: domain.clock,
        log,
        staleTimeoutSeconds: domain.config.SVC_AGENT_STALE_TIMEOUT_SECONDS,
        integrations: upsertIntegrationsOfHosts,
      };
      const consumers = [await startHeartbeatIngest(statusDeps), await startAgentEventIngest(statusDeps)];
      const metrics = await startMetricsIngest({ nc: domain.nc, directory, tsdb, log });
      const inventory = await startInventoryIngest({ nc: domain.nc, orm, directory, clock: domain.clock, log });
      const sweeper = startStaleSweeper(statusDeps);
      return {
        stop: async () => {
          await sweeper.stop();
          await Promise.all([...consumers.map((c) => c.stop()), metrics.stop(), inventory.stop()]);
          await revoker.close();
        },
      };
    } catch (err) {
      await revoker.close();
      throw err;
    }
  },
};
