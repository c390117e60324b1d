import type { NatsConnection } from '@nats-io/transport-node';
import type { SystemCatalogue } from '../contracts/catalogue.ts';
import type { Config } from './config.ts';
import type { Logger } from './logger.ts';
import type { ActorHost } from './serve.ts';
import type { Stores } from './stores/index.ts';
import type { EntityDef } from './stores/postgres.ts';
import type { Clock } from './clock.ts';

/** What every domain gets when its actors start in a process. */
export interface DomainContext {
  config: Config;
  /** Already bound to `{ domain: <name> }`: bind it again and every line carries the key twice. */
  log: Logger;
  nc: NatsConnection;
  host: ActorHost<SystemCatalogue>;
  stores: Stores;
  clock: Clock;
}

/** A started domain: `stop` ends its background work (consumers, timers); request endpoints drain with the host. */
export interface DomainHandle {
  stop(): Promise<void>;
}

export interface DomainModule {
  name: string;
  /** The ORM entities of the domain's own tables (MikroORM `defineEntity` schemas); the process's ORM knows them all. */
  entities?: readonly EntityDef[];
  start(ctx: DomainContext): Promise<DomainHandle>;
}
