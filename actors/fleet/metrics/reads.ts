import type { EntityManager } from '@mikro-orm/postgresql';
import { loadHost, requireOnClient } from '../scope.ts';
import { HostScopes, type HostScope } from './host-scopes.ts';
import { LabelNamesCache } from './label-names.ts';
import { PERMISSION, type MetricsReadDeps, type MetricsReadHandlers, type MetricsReads } from './reads/deps.ts';
import { latestHandlers } from './reads/latest.ts';
import { listingHandlers } from './reads/listings.ts';
import { pointsHandlers } from './reads/points.ts';
import { processContainerHandlers } from './reads/process-container.ts';

export type { MetricsReadDeps } from './reads/deps.ts';

/**
 * The metric routes (docs/api/metrics.md#routes: host, process and container metrics). Each needs
 * metrics:read on the host's client (the process route also processes:read): a host out of reach is 404, in reach
 * without the permission 403. Reads go to VictoriaMetrics confined to the host (store-reads.ts). The routes are in
 * reads/: the listings of names and series, a series' points, the latest values, process and container charts.
 */
export function metricsReadHandlers(deps: MetricsReadDeps): MetricsReadHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();
  const labelNames = deps.labelNames ?? new LabelNamesCache();
  const scopes = deps.hostScopes ?? new HostScopes();
  const host = async (ctx: Parameters<typeof loadHost>[1], id: string): Promise<HostScope> => {
    const kept = scopes.get(id);
    if (kept) {
      requireOnClient(ctx, kept.client_id, PERMISSION, 'host');
      return kept;
    }
    const mark = scopes.mark;
    const row = await loadHost(fork(), ctx, id, PERMISSION);
    scopes.set(row, mark);
    return row;
  };
  const reads: MetricsReads = { deps, fork, labelNames, host };

  return {
    ...listingHandlers(reads),
    ...pointsHandlers(reads),
    ...latestHandlers(reads),
    ...processContainerHandlers(reads),
  };
}
