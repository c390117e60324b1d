import { labelsKeyOf } from '../labels-key.ts';
import { hostFilter, selector, storeCall } from '../store-reads.ts';
import type { MetricsReadHandlers, MetricsReads } from './deps.ts';

/** How far back the name and labels_key listings look: the longest range a chart may show. */
const LISTING_WINDOW_MS = 31 * 86_400_000;

/**
 * `svc.fleet.metrics.names` and `svc.fleet.metrics.series`: the metric names a host reported, and the labels_keys
 * of one metric's series, over the listing window.
 */
export function listingHandlers({ deps, host }: MetricsReads): MetricsReadHandlers {
  return {
    'svc.fleet.metrics.names': async ({ id }, { ctx, signal }) => {
      const h = await host(ctx, id);
      const now = deps.clock.now();
      const found = await storeCall(() =>
        deps.tsdb.labelValues('__name__', [selector([['host_id', '=', h.id]])], {
          start: (now - LISTING_WINDOW_MS) / 1000,
          end: now / 1000,
          extraFilters: [hostFilter(h)],
          signal,
        }),
      );
      return [...new Set(found)].sort();
    },

    'svc.fleet.metrics.series': async ({ id, metric }, { ctx, signal }) => {
      const h = await host(ctx, id);
      const now = deps.clock.now();
      const series = await storeCall(() =>
        deps.tsdb.series(
          [
            selector([
              ['__name__', '=', metric],
              ['host_id', '=', h.id],
            ]),
          ],
          (now - LISTING_WINDOW_MS) / 1000,
          now / 1000,
          [hostFilter(h)],
          signal,
        ),
      );
      return [...new Set(series.map(labelsKeyOf))].sort();
    },
  };
}
