import type { ImportSeries } from './tsdb.ts';

/**
 * What the batcher collects: import rows by default; the metrics ingest gives it each batch's import lines as one
 * string (ingest.ts ImportChunk), which keeps what waits for an import to one flat string per batch.
 */
export interface ImportBatcherOptions<T = ImportSeries> {
  /** One import of the collected items; rejects when the store did not take them. */
  write(items: readonly T[]): Promise<void>;
  /** Samples an item holds (default: an ImportSeries row's values). */
  samplesOf?: (item: T) => number;
  /** Longest the oldest waiting rows wait before their import starts. */
  maxDelayMs: number;
  /** An import starts as soon as this many samples wait, and carries at most this many (unless one entry is larger). */
  maxSamples: number;
  /** Imports running at once; a due flush waits for one of them to end. */
  maxConcurrentWrites: number;
  /**
   * True when the store refused the content itself (not an outage): the flush's entries are then imported one by
   * one, so a single bad entry fails alone instead of holding back everything batched with it.
   */
  isRefusal?: (err: unknown) => boolean;
  /** For tests and callers that want a clock other than Date.now. */
  now?: () => number;
}

interface Entry<T> {
  items: readonly T[];
  samples: number;
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Collects import rows from many concurrent callers into few imports. `add` resolves once the import holding the
 * caller's rows succeeded and rejects with that import's error otherwise, so a message is acknowledged only when
 * its samples are stored.
 */
const rowSamples = (row: ImportSeries): number => row.values.length;

export class ImportBatcher<T = ImportSeries> {
  private pending: Entry<T>[] = [];
  private pendingSamples = 0;
  private writing = 0;
  private timer: NodeJS.Timeout | undefined;
  private closing = false;
  private readonly writes = new Set<Promise<void>>();
  private readonly now: () => number;
  private readonly samplesOf: (item: T) => number;

  private readonly opts: ImportBatcherOptions<T>;
  constructor(opts: ImportBatcherOptions<T>) {
    this.opts = opts;
    if (
      !(opts.maxDelayMs >= 0) ||
      !(opts.maxSamples >= 1) ||
      !Number.isInteger(opts.maxConcurrentWrites) ||
      opts.maxConcurrentWrites < 1
    ) {
      throw new RangeError(
        'ImportBatcher needs maxDelayMs >= 0, maxSamples >= 1 and an integer maxConcurrentWrites >= 1',
      );
    }
    this.now = opts.now ?? Date.now;
    // Without samplesOf the items are ImportSeries rows (the type's default); a caller of another type passes it.
    this.samplesOf = opts.samplesOf ?? (rowSamples as unknown as (item: T) => number);
  }

  /** Samples waiting for an import (not those being imported). */
  get waitingSamples(): number {
    return this.pendingSamples;
  }

  add(items: readonly T[]): Promise<void> {
    if (items.length === 0) return Promise.resolve();
    if (this.closing) return Promise.reject(new Error('the metric import batcher is closed'));
    let samples = 0;
    for (const item of items) samples += this.samplesOf(item);
    const done = new Promise<void>((resolve, reject) => {
      this.pending.push({ items, samples, at: this.now(), resolve, reject });
    });
    this.pendingSamples += samples;
    this.schedule();
    return done;
  }

  /** Imports everything still waiting (at once, not after the delay) and resolves when every import has ended. */
  async close(): Promise<void> {
    this.closing = true;
    this.schedule();
    while (this.writes.size > 0 || this.pending.length > 0) {
      await Promise.allSettled([...this.writes]);
      this.schedule();
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Starts every import that is due and a slot allows; otherwise makes sure a timer or a running import comes back. */
  private schedule(): void {
    while (this.pending.length > 0 && this.writing < this.opts.maxConcurrentWrites) {
      const wait =
        this.closing || this.pendingSamples >= this.opts.maxSamples
          ? 0
          : this.pending[0]!.at + this.opts.maxDelayMs - this.now();
      if (wait > 0) {
        // A timer armed for an older entry fires early at worst; it then re-arms for the rest.
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.schedule();
        }, wait);
        return;
      }
      this.start(this.take());
    }
  }

  /** The oldest entries up to maxSamples (at least one). */
  private take(): Entry<T>[] {
    const out: Entry<T>[] = [];
    let samples = 0;
    while (this.pending.length > 0) {
      const next = this.pending[0]!;
      if (out.length > 0 && samples + next.samples > this.opts.maxSamples) break;
      out.push(this.pending.shift()!);
      samples += next.samples;
    }
    this.pendingSamples -= samples;
    return out;
  }

  private start(entries: Entry<T>[]): void {
    this.writing++;
    const p = this.write(entries).finally(() => {
      this.writing--;
      this.writes.delete(p);
      this.schedule();
    });
    this.writes.add(p);
  }

  private async write(entries: Entry<T>[]): Promise<void> {
    try {
      await this.opts.write(entries.length === 1 ? entries[0]!.items : entries.flatMap((e) => e.items));
      for (const e of entries) e.resolve();
    } catch (err) {
      if (entries.length === 1 || !this.opts.isRefusal?.(err)) {
        for (const e of entries) e.reject(err);
        return;
      }
      for (const e of entries) {
        try {
          await this.opts.write(e.items);
          e.resolve();
        } catch (one) {
          e.reject(one);
        }
      }
    }
  }
}
