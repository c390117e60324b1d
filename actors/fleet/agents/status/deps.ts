import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import type { IntegrationReport } from '../../../../contracts/domains/agent-telemetry.ts';
import type { Clock } from '../../../../platform/clock.ts';
import type { Logger } from '../../../../platform/logger.ts';
import type { AgentDirectory } from '../../telemetry/consume.ts';

/** Stores a host's integration reports (the inventory part owns the table); heartbeats never remove any. */
export type IntegrationSink = (
  em: EntityManager,
  entries: { host: { id: string; client_id: string }; reports: IntegrationReport[]; at: Date }[],
) => Promise<void>;

export interface StatusDeps {
  nc: NatsConnection;
  orm: MikroORM;
  directory: AgentDirectory;
  clock: Clock;
  log: Logger;
  staleTimeoutSeconds: number;
  integrations?: IntegrationSink;
}
