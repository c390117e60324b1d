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
