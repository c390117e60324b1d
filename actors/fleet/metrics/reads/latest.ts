import { hasPermission, requirePermission } from '../../../../contracts/access.ts';
import { LATEST_LIMITS, type LatestValue } from '../../../../contracts/domains/fleet-metrics.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import { ownLabels } from '../labels-key.ts';
import { latestValues, selector } from '../store-reads.ts';
import { PERMISSION, type MetricsReadHandlers, type MetricsReads } from './deps.ts';

/** `svc.fleet.metrics.latest`: the newest value of some metrics on many hosts at once (a host list's columns). */
export function latestHandlers({ deps, fork }: MetricsReads): MetricsReadHandlers {
  return {
    'svc.fleet.metrics.latest': async ({ host_ids, metrics }, { ctx, signal }) => {
      // 403 like every other metric route for a caller who may read metrics nowhere; a holder somewhere gets the
      // silent filtering below, which never tells which of the ids exist.
      requirePermission(ctx, PERMISSION);
      const rows = await sql<{ id: string; client_id: string }>(
        fork(),
        'SELECT id, client_id FROM hosts WHERE id IN (?)',
        [[...new Set(host_ids)]],
      );
      // Out of reach, without metrics:read, or unknown: such hosts simply answer nothing.
      const readable = rows.filter((r) => hasPermission(ctx, PERMISSION, r.client_id));
      if (readable.length === 0) return [];
      const now = deps.clock.now();
      const filter = selector([
        ['client_id', '=~', [...new Set(readable.map((r) => r.client_id))].join('|')],
        ['host_id', '=~', readable.map((r) => r.id).join('|')],
      ]);
      const wantedNames = [...new Set(metrics)];
      // Several queries when the names would make one longer than the store accepts (16 KB by default).
      const chunks: string[][] = [[]];
      let length = 0;
      for (const n of wantedNames) {
        if (length + n.length > 4_000 && chunks.at(-1)!.length > 0) {
          chunks.push([]);
          length = 0;
        }
        chunks.at(-1)!.push(n);
        length += n.length + 1;
      }
      const answers = await Promise.all(
        chunks.map((chunk) =>
          latestValues(
            deps.tsdb,
            selector([
              ['__name__', '=~', chunk.join('|')],
              ['host_id', '=~', readable.map((r) => r.id).join('|')],
            ]),
            filter,
            now,
            LATEST_LIMITS.windowMinutes * 60_000,
            signal,
          ),
        ),
      );
      // The unlabelled series of each metric (the value the host as a whole reports); the newest if a host moved and
      // has it under two environments.
      const newest = new Map<string, LatestValue & { timeMs: number }>();
      for (const s of answers.flat()) {
        if (Object.keys(ownLabels(s.metric)).length > 0) continue;
        const hostId = s.metric.host_id ?? '';
        const name = s.metric.__name__ ?? '';
        const key = `${hostId} ${name}`;
        const seen = newest.get(key);
        if (!seen || s.timeMs > seen.timeMs)
          newest.set(key, {
            host_id: hostId,
            metric_name: name,
            value: s.value,
            time: new Date(s.timeMs).toISOString(),
            timeMs: s.timeMs,
          });
      }
      const order = new Map(host_ids.map((h, i) => [h, i]));
      return [...newest.values()]
        .sort(
          (a, b) =>
            order.get(a.host_id)! - order.get(b.host_id)! ||
            (a.metric_name < b.metric_name ? -1 : a.metric_name > b.metric_name ? 1 : 0),
        )
        .map(({ timeMs: _t, ...v }) => v);
    },
  };
}
