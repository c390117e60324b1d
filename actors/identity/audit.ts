import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import type { CallerContext } from '../../contracts/context.ts';
import { AuditEntry } from '../../contracts/streams.ts';
import { publishEvent, runConsumer, type ConsumerHandle } from '../runtime/jetstream.ts';
import type { Logger } from '../runtime/logger.ts';
import type { Clock } from '../runtime/clock.ts';

export interface AuditInput {
  action: string;
  resource_type: string;
  resource_id?: string | null;
  details?: Record<string, unknown>;
  /** Who acted, when the context has no signed-in principal yet (a login, an accepted invitation). */
  actor?: { id: string; email: string };
}

/**
 * Writes audit entries through the event stream: the acting actor publishes (deduplicated by entry id), the audit
 * actor stores. A publish that fails is retried by the caller's own retry, never silently dropped.
 */
export class AuditRecorder {
  constructor(
    private readonly nc: NatsConnection,
    private readonly clock: Clock,
  ) {}

  async record(ctx: CallerContext, input: AuditInput): Promise<void> {
    const p = ctx.principal;
    const actor =
      input.actor ??
      (p.kind === 'user' ? { id: p.user_id, email: p.email } : p.kind === 'service_account' ? { id: p.service_account_id, email: `service-account:${p.name}` } : null);
    const entry: AuditEntry = {
      id: randomUUID(),
      actor_id: actor?.id ?? null,
      actor_email: actor?.email ?? null,
      actor_type: p.kind === 'service_account' ? 'service_account' : actor ? 'user' : 'anonymous',
      action: input.action,
      resource_type: input.resource_type,
      resource_id: input.resource_id ?? null,
      details: input.details ?? {},
      ip: ctx.ip ?? null,
      user_agent: ctx.user_agent ?? null,
      request_id: ctx.request_id,
      created_at: new Date(this.clock.now()).toISOString(),
    };
    await publishEvent(this.nc, 'svc.evt.audit.recorded', entry, { msgId: entry.id });
  }
}

/** The audit actor: stores every recorded entry once (the entry id makes redelivery harmless). */
export function startAuditStore(nc: NatsConnection, orm: MikroORM, log: Logger): Promise<ConsumerHandle> {
  return runConsumer({
    nc,
    stream: 'SVC_EVENTS',
    durable: 'identity-audit-store',
    filterSubjects: ['svc.evt.audit.recorded'],
    schema: AuditEntry,
    concurrency: 4,
    log,
    handler: async (e) => {
      await orm.em
        .fork()
        .getConnection()
        .execute(
          `INSERT INTO audit_log (id, actor_id, actor_email, actor_type, action, resource_type, resource_id, details, ip_address, user_agent, request_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
          [e.id, e.actor_id, e.actor_email, e.actor_type, e.action, e.resource_type, e.resource_id, JSON.stringify(e.details), e.ip, e.user_agent, e.request_id, e.created_at],
        );
    },
  });
}
