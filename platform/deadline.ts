import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The deadline of the request being handled, visible to code that has no RequestScope (the PostgreSQL pool and
 * transactions in stores/postgres.ts): ActorHost runs each handler inside it. Absent outside requests (consumers,
 * start-up, migrations), where no request deadline applies.
 */
export interface DeadlineScope {
  /** Epoch ms. */
  readonly deadline: number;
  readonly signal: AbortSignal;
}

const current = new AsyncLocalStorage<DeadlineScope>();

export const runWithDeadline = <T>(scope: DeadlineScope, fn: () => T): T => current.run(scope, fn);

export const currentDeadline = (): DeadlineScope | undefined => current.getStore();

/**
 * The deadline of one request and its abort signal, made on first use: most handlers never read the signal, and an
 * AbortController with its deadline timer, made for every request, was a visible share of an actor's CPU per
 * request-reply (docs/benchmarks.md). Read during the request, the signal aborts with `reason()` when the deadline
 * passes (at once when it already has), as an eager one would. `end()` when the request is over: its timer goes, and a
 * signal first read after that (by work the handler left running) never aborts, as an eager one whose timer was
 * cleared at the end never did.
 */
export class RequestDeadline implements DeadlineScope {
  private controller: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  readonly deadline: number;
  private readonly reason: () => Error;
  constructor(deadline: number, reason: () => Error) {
    this.deadline = deadline;
    this.reason = reason;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      const ac = new AbortController();
      this.controller = ac;
      const left = this.deadline - Date.now();
      if (this.ended) return ac.signal;
      if (left <= 0) ac.abort(this.reason());
      else this.timer = setTimeout(() => ac.abort(this.reason()), left);
    }
    return this.controller.signal;
  }

  end(): void {
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
