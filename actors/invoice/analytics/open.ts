import type { Config } from '../../../platform/config.ts';
import type { Stores } from '../../../platform/stores/index.ts';
import { AnalyticsOwnershipError, NOT_OWNER_MESSAGE, runsInvoiceDomain, usesEmbeddedAnalytics } from './owner.ts';
import { openAnalytics, type AnalyticsStore } from './store.ts';

/**
 * The process's analytics store, opened once and closed with its other stores. chDB lives in one process only (it
 * locks its directory): a process that does not run the invoice domain is refused here, so a gateway or another
 * domain never takes the lock by accident.
 */
export function analyticsStore(
  stores: Stores,
  config: Pick<Config, 'SVC_CLICKHOUSE_URL' | 'SVC_ANALYTICS_PATH' | 'SVC_ACTORS'>,
): Promise<AnalyticsStore> {
  if (usesEmbeddedAnalytics(config) && !runsInvoiceDomain(config))
    return Promise.reject(new AnalyticsOwnershipError(NOT_OWNER_MESSAGE));
  return stores.owned(
    'analytics',
    () => openAnalytics(config),
    (store) => store.close(),
  );
}
