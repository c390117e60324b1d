import { DomainError } from '../../../../contracts/errors.ts';
import { bucketsOf, resolveRange, toPoints } from '../buckets.ts';
import type { HostScope } from '../host-scopes.ts';
import { LabelsKeyError, labelsKeyOf, ownLabels, parseLabelsKey } from '../labels-key.ts';
import {
  accumulateGauges,
  gaugeSeries,
  hostFilter,
  selector,
  storeCall,
  type GaugeSeries,
  type Match,
} from '../store-reads.ts';
import type { MetricsReadHandlers, MetricsReads } from './deps.ts';

/** `svc.fleet.metrics.points`: the chart of one series (a metric and a labels_key) of a host. */
export function pointsHandlers({ deps, host, labelNames }: MetricsReads): MetricsReadHandlers {
  return {
    'svc.fleet.metrics.points': async ({ id, metric, start, end, labels_key }, { ctx, signal }) => {
      let wanted: Record<string, string>;
      try {
        wanted = parseLabelsKey(labels_key);
      } catch (err) {
        if (err instanceof LabelsKeyError) throw new DomainError('bad_request', err.message);
        throw err;
      }
      const b = bucketsOf(resolveRange({ start, end }, deps.clock.now()));
      const key = labelsKeyOf(wanted);
      const base: Match[] = [
        ['__name__', '=', metric],
        ['host_id', '=', id],
      ];
      // A selector matches supersets of its labels too: the label names other series of this metric carry are
      // required empty, so (nearly) only the series of this labels_key is read.
      const exactOf = (names: ReadonlySet<string>): string =>
        selector([
          ...base,
          ...Object.entries(wanted).map(([l, v]): Match => [l, '=', v]),
          ...[...names]
            .filter((l) => !Object.hasOwn(wanted, l))
            .sort()
            .map((l): Match => [l, '=', '']),
        ]);
      // Until the host's row says its client, the store is asked for the host's series only; the answer is used only
      // once the host is authorized, and only its series of the host's client (`keep` below).
      const ofHost = selector([['host_id', '=', id]]);
      const known = labelNames.get(id, metric);
      let h: HostScope;
      let answer: GaugeSeries[];
      if (known) {
        // The names are known: the host's authorization and the chart's query run at once (one round trip).
        const [authorized, queried] = await Promise.allSettled([
          host(ctx, id),
          gaugeSeries(deps.tsdb, exactOf(known), ofHost, b, signal),
        ]);
        // The host's 404/403 first, whatever the store did meanwhile.
        if (authorized.status === 'rejected') throw authorized.reason;
        if (queried.status === 'rejected') throw queried.reason;
        h = authorized.value;
        answer = queried.value;
      } else {
        // Otherwise the store's index says them, beside the host's authorization, and the query follows.
        const [authorized, lookup] = await Promise.allSettled([
          host(ctx, id),
          storeCall(() =>
            deps.tsdb.series([selector(base)], b.firstMs / 1000, (b.lastMs + b.sizeMs) / 1000, [ofHost], signal),
          ),
        ]);
        if (authorized.status === 'rejected') throw authorized.reason;
        if (lookup.status === 'rejected') throw lookup.reason;
        h = authorized.value;
        const series = lookup.value.filter((s) => s.client_id === h.client_id);
        const names = new Set(series.flatMap((s) => Object.keys(ownLabels(s))));
        labelNames.set(id, metric, names);
        if (!series.some((s) => labelsKeyOf(s) === key)) return [];
        answer = await gaugeSeries(deps.tsdb, exactOf(names), hostFilter(h), b, signal);
      }
      // Exactly the wanted series count, whatever the selector let through (a label name new since the names were
      // learnt); the names seen are learnt for the next chart.
      const seen = new Set<string>();
      const byName = accumulateGauges(answer, b, (m) => {
        if (m.client_id !== h.client_id) return false;
        const { rollup: _rollup, ...labels } = m;
        const own = ownLabels(labels);
        for (const n of Object.keys(own)) seen.add(n);
        return labelsKeyOf(own) === key;
      });
      labelNames.learn(id, metric, seen);
      return toPoints(byName.get(metric) ?? new Map());
    },
  };
}
