/** What the metric routes need of a host: its id and its client (the tenant of its series). */
export interface HostScope {
  id: string;
  client_id: string;
}

/**
 * The client of each host the metric routes were asked about lately, so a chart does not read the host's row before
 * every query (that read was a third of a chart's work in the fleet process; docs/benchmarks.md has the figures). A host never changes client (no route moves a host across clients, and ids are never
 * used again), so a kept entry can only be stale by the host having been deleted: the metric routes then still answer
 * for at most `ttlMs` in another process, and at once 404 in the process that deleted it (forget / forgetAll). The
 * caller's permission on the client is checked on every request against its current access; only the row's existence
 * and client are kept, and only rows that were found.
 */
export class HostScopes {
  private readonly entries = new Map<string, { scope: HostScope; at: number }>();
  /** Bumped by every forget: a row read before it may be of a host deleted since, and is not kept. */
  private forgets = 0;

  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  constructor(ttlMs = 5_000, maxEntries = 10_000, now: () => number = Date.now) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.now = now;
  }

  get(id: string): HostScope | undefined {
    const hit = this.entries.get(id);
    if (!hit) return undefined;
    if (this.now() - hit.at >= this.ttlMs) {
      this.entries.delete(id);
      return undefined;
    }
    return hit.scope;
  }

  /** Where forgetting stands: pass it to set() with a row read after this call. */
  get mark(): number {
    return this.forgets;
  }

  /** Keeps the host of a row read after `mark` was taken, unless a host was forgotten since. */
  set(host: HostScope, mark: number): void {
    if (mark !== this.forgets) return;
    this.entries.delete(host.id);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(host.id, { scope: { id: host.id, client_id: host.client_id }, at: this.now() });
  }

  /** A host deleted here. */
  forget(id: string): void {
    this.forgets++;
    this.entries.delete(id);
  }

  /** Hosts deleted with their environment or client. */
  forgetAll(): void {
    this.forgets++;
    this.entries.clear();
  }
}
