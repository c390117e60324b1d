/**
 * The own label names (labels-key.ts ownLabels) seen on the series of one metric of one host, remembered so a chart
 * does not ask the store's index before each query. A chart needs them to narrow its selector to exactly one
 * series: `{__name__="cpu",host_id="…"}` also matches the per-CPU series, `…,cpu=""}` does not.
 *
 * Nothing depends on this being complete: the chart also keeps, of the query's answer, only the series whose labels
 * are exactly the wanted ones, so a name learnt late makes one query broader, never a chart wrong; and it learns
 * from that answer. A name no longer in use only adds a harmless `name=""` matcher. Entries therefore live long,
 * and expire only so that a host+metric nobody charts stops taking room.
 */
export class LabelNamesCache {
  private readonly entries = new Map<string, { names: Set<string>; at: number }>();

  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  constructor(ttlMs = 10 * 60_000, maxEntries = 20_000, now: () => number = Date.now) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.now = now;
  }

  private static key(hostId: string, metric: string): string {
    return `${hostId} ${metric}`;
  }

  /** The names known for this host and metric, or undefined when the store's index must be asked. */
  get(hostId: string, metric: string): ReadonlySet<string> | undefined {
    const key = LabelNamesCache.key(hostId, metric);
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (this.now() - hit.at >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return hit.names;
  }

  /** After asking the index: `names` are all the own label names of the metric's series now. */
  set(hostId: string, metric: string, names: Iterable<string>): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(LabelNamesCache.key(hostId, metric), { names: new Set(names), at: this.now() });
  }

  /** Names seen in a query's answer: added to a live entry (its age unchanged); nothing when there is none. */
  learn(hostId: string, metric: string, names: Iterable<string>): void {
    const hit = this.entries.get(LabelNamesCache.key(hostId, metric));
    if (hit) for (const n of names) hit.names.add(n);
  }
}
