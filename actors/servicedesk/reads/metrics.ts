import type { SdDeps, SdHandlers } from '../deps.ts';
import { deliveryMetricsHandlers } from './metrics/delivery.ts';
import { slaMetricsHandlers } from './metrics/sla.ts';
import { summaryMetricsHandlers } from './metrics/summary.ts';

export { throughputSince } from './metrics/summary.ts';

/**
 * The metrics routes read the store only (no pending writes), over the requests the caller's mappings cover.
 * Definitions (docs/api/service-desk.md): hours and days are wall-clock; percentages are 0-100 with two decimals, null without data.
 * Each route is in metrics/, in a file named after it; metrics/aggregate.ts holds what they share.
 */
export function metricsHandlers(deps: SdDeps): SdHandlers {
  return { ...slaMetricsHandlers(deps), ...deliveryMetricsHandlers(deps), ...summaryMetricsHandlers(deps) };
}
