import type { Logger } from '../platform/logger.ts';
import { errMessage } from './connection.ts';

/**
 * Runs collection rounds one after another, each starting `intervalMs` after the previous one started (at once when
 * a round took longer). A failed round is logged; the schedule goes on.
 */
export class RoundScheduler {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;

  private readonly round: () => Promise<void>;
  private readonly intervalMs: number;
  private readonly log: Logger;
  constructor(round: () => Promise<void>, intervalMs: number, log: Logger) {
    this.round = round;
    this.intervalMs = intervalMs;
    this.log = log;
  }

  /** The round under way, or the last one (settled). */
  get current(): Promise<void> {
    return this.ticking;
  }

  /** The first round runs after `delayMs`. */
  start(delayMs: number): void {
    this.schedule(delayMs);
  }

  /** No round starts from now on; one under way finishes (see `current`). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const began = Date.now();
      this.ticking = this.round()
        .catch((err: unknown) => this.log.error({ err: errMessage(err) }, 'collection round failed'))
        .finally(() => this.schedule(Math.max(0, began + this.intervalMs - Date.now())));
    }, delayMs);
  }
}
