import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import type { SystemCatalogue } from '../../contracts/catalogue.ts';
import type { AuditRecorder } from '../../platform/audit.ts';
import type { Caller } from '../../platform/call.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import type { Handlers } from '../../platform/serve.ts';
import type { FleetDirectory } from './fleet-directory.ts';
import type { ReceiverRegistry } from './receivers/registry.ts';

/** What the events domain's actors and consumers share. Built once per process by actors/events/index.ts. */
export interface EventsDeps {
  config: Config;
  log: Logger;
  orm: MikroORM;
  nc: NatsConnection;
  clock: Clock;
  audit: AuditRecorder;
  /** Seals webhook shared secrets at rest. */
  box: SecretBox;
  fleet: FleetDirectory;
  receivers: ReceiverRegistry;
  /** For calls made outside a request (consumers): the fleet's and identity's lookups. */
  caller: Caller<SystemCatalogue>;
}

export type EventsHandlers = Handlers<SystemCatalogue, 'events'>;
