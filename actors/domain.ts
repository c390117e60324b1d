import type { NatsConnection } from '@nats-io/transport-node';
import type { Cat } from '../contracts/catalogue.ts';
import type { Config } from './runtime/config.ts';
import type { Logger } from './runtime/logger.ts';
import type { ActorHost } from './runtime/serve.ts';
import type { Stores } from './runtime/stores/index.ts';
import type { Clock } from './runtime/clock.ts';

/** What every domain gets when its actors start in a process. */
export interface DomainContext {
  config: Config;
  /** Already bound to `{ domain: <name> }`: bind it again and every line carries the key twice. */
  log: Logger;
  nc: NatsConnection;
  host: ActorHost<Cat>;
  stores: Stores;
  clock: Clock;
}

/** A started domain: `stop` ends its background work (consumers, timers); request endpoints drain with the host. */
export interface DomainHandle {
  stop(): Promise<void>;
}

export interface DomainModule {
  name: string;
  start(ctx: DomainContext): Promise<DomainHandle>;
}
