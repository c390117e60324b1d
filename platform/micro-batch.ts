/**
 * Gathers items from many concurrent callers into few writes: `add` resolves with the item's own result once the
 * write holding it is done, and rejects with that write's error, so a message is acknowledged only when what it
 * carried is stored. A write starts when `maxItems` wait or the oldest has waited `maxDelayMs`; one write at a time,
 * so writes keep their order and a slow store is never hit by a pile of them.
 */
export class MicroBatcher<T, R> {
  private pending: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  private readonly opts: {
    maxItems: number;
    maxDelayMs: number;
    /** Results in the order of `items`. */
    write: (items: T[]) => Promise<R[]>;
  };
  constructor(opts: {
    maxItems: number;
    maxDelayMs: number;
    /** Results in the order of `items`. */
    write: (items: T[]) => Promise<R[]>;
  }) {
    this.opts = opts;
  }

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.opts.maxItems) this.kick();
      else this.timer ??= setTimeout(() => this.kick(), this.opts.maxDelayMs);
    });
  }

  /** Writes whatever waits, and resolves when every write started so far is done. */
  async flush(): Promise<void> {
    while (this.pending.length > 0 || this.running) {
      this.kick();
      await this.running;
    }
  }

  private kick(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running || this.pending.length === 0) return;
    const batch = this.pending.splice(0, this.opts.maxItems);
    this.running = (async () => {
      try {
        const results = await this.opts.write(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i] as R));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    })().finally(() => {
      this.running = undefined;
      // What arrived during the write goes next, at once when a full batch waits, else after the usual delay.
      if (this.pending.length >= this.opts.maxItems) this.kick();
      else if (this.pending.length > 0) this.timer ??= setTimeout(() => this.kick(), this.opts.maxDelayMs);
    });
  }
}
