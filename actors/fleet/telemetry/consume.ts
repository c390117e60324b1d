import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';
import type { TelemetryKind } from '../../../contracts/domains/agent-telemetry.ts';
import { agentOfTelemetrySubject, streams, telemetryFilter } from '../../../contracts/streams.ts';
import { NonRetryableError, runConsumer, type ConsumerHandle, type DeliveryMeta } from '../../../platform/jetstream.ts';
import type { Logger } from '../../../platform/logger.ts';
import { sql } from '../../../platform/stores/sql.ts';

/** Who sent a telemetry message: always from the subject's agent token, resolved to its host and tenant. */
export interface AgentRef {
  agent_id: string;
  host_id: string;
  environment_id: string;
  client_id: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The agent id of a telemetry subject, or undefined when it is not one of an agent this system could have enrolled. */
export function agentOfSubject(subject: string): string | undefined {
  const agentId = agentOfTelemetrySubject(subject);
  return agentId !== undefined && UUID.test(agentId) ? agentId : undefined;
}

/**
 * Active agents by id, cached briefly: every telemetry message needs its host and tenant, and a lookup per heartbeat
 * at fleet scale would be most of the ingest's database work. A revoked agent is disconnected by the broker at once;
 * what it published before is still accepted for at most `ttlMs`.
 */
export class AgentDirectory {
  private readonly cache = new Map<string, { ref: AgentRef | null; at: number }>();

  private readonly orm: MikroORM;
  private readonly ttlMs: number;
  constructor(orm: MikroORM, ttlMs = 30_000) {
    this.orm = orm;
    this.ttlMs = ttlMs;
  }

  async resolve(agentId: string): Promise<AgentRef | null> {
    const hit = this.cache.get(agentId);
    const now = Date.now();
    if (hit && now - hit.at < this.ttlMs) return hit.ref;
    const [row] = await sql<AgentRef>(
      this.orm.em.fork(),
      `SELECT a.id AS agent_id, h.id AS host_id, h.environment_id, h.client_id
         FROM agents a JOIN hosts h ON h.agent_id = a.id WHERE a.id = ? AND a.status = 'active'`,
      [agentId],
    );
    const ref = row ?? null;
    if (this.cache.size > 100_000) this.cache.clear();
    this.cache.set(agentId, { ref, at: now });
    return ref;
  }

  forget(agentId: string): void {
    this.cache.delete(agentId);
  }
}

export interface TelemetryConsumerOptions<T> {
  nc: NatsConnection;
  directory: AgentDirectory;
  kind: TelemetryKind;
  /** Durable name, e.g. `fleet-telemetry-heartbeat`. */
  durable: string;
  schema: z.ZodType<T>;
  /** Bytes to what `schema` checks (default UTF-8 JSON); see RunConsumerOptions.decode. */
  decode?: (data: Uint8Array, subject: string) => unknown;
  handler: (agent: AgentRef, payload: T, meta: DeliveryMeta) => Promise<void>;
  concurrency?: number;
  /** Deliveries before a failing message is dead-lettered (default 5), and the delays between them. */
  maxDeliver?: number;
  backoffMs?: readonly number[];
  log: Logger;
}

/**
 * A durable consumer of one telemetry kind from every agent. The agent is the subject's token, never a body field;
 * a malformed payload or a message from an unknown or revoked agent is dead-lettered with its reason and the consumer
 * goes on. Starts at new messages when first created: telemetry older than the durable belongs to nobody here.
 */
export function runTelemetryConsumer<T>(opts: TelemetryConsumerOptions<T>): Promise<ConsumerHandle> {
  return runConsumer<T>({
    nc: opts.nc,
    stream: streams.SVC_TELEMETRY.name,
    durable: opts.durable,
    filterSubjects: [telemetryFilter(opts.kind)],
    schema: opts.schema,
    ...(opts.decode ? { decode: opts.decode } : {}),
    startAt: 'new',
    concurrency: opts.concurrency ?? 8,
    maxAckPending: 10_000,
    maxDeliver: opts.maxDeliver ?? 5,
    backoffMs: opts.backoffMs ?? [500, 2_000, 10_000, 30_000],
    log: opts.log,
    handler: async (payload, meta) => {
      const agentId = agentOfSubject(meta.subject);
      if (!agentId) throw new NonRetryableError(`not an agent telemetry subject: ${meta.subject}`);
      const agent = await opts.directory.resolve(agentId);
      if (!agent) throw new NonRetryableError(`unknown or revoked agent ${agentId}`);
      await opts.handler(agent, payload, meta);
    },
  });
}
