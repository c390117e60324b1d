import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import type { CallerContext } from '../contracts/context.ts';
import type { AuditEntry } from '../contracts/streams.ts';
import type { Clock } from './clock.ts';
import { publishEvent } from './jetstream.ts';

export interface AuditInput {
  action: string;
  resource_type: string;
  resource_id?: string | null;
  /**
   * The clients the entry concerns (the audit log shows it only to holders of audit:read on each of them); `[]` for a
   * global entry (a login, a user, a role), which only super admins and all-client holders see. Required, so no call
   * site forgets to say.
   */
  client_ids: readonly string[];
  details?: Record<string, unknown>;
  /** Who acted, when the context has no signed-in principal yet (a login, an accepted invitation). */
  actor?: { id: string; email: string };
}

/**
 * Writes audit entries through the event stream: the acting actor publishes (deduplicated by entry id), the audit
 * actor stores. A publish that fails is retried by the caller's own retry, never silently dropped.
 */
export class AuditRecorder {
  private readonly nc: NatsConnection;
  private readonly clock: Clock;
  constructor(nc: NatsConnection, clock: Clock) {
    this.nc = nc;
    this.clock = clock;
  }

  async record(ctx: CallerContext, input: AuditInput): Promise<void> {
    const p = ctx.principal;
    const actor =
      input.actor ??
      (p.kind === 'user'
        ? { id: p.user_id, email: p.email }
        : p.kind === 'service_account'
          ? { id: p.service_account_id, email: `service-account:${p.name}` }
          : null);
    const entry: AuditEntry = {
      id: randomUUID(),
      actor_id: actor?.id ?? null,
      actor_email: actor?.email ?? null,
      actor_type: p.kind === 'service_account' ? 'service_account' : actor ? 'user' : 'anonymous',
      action: input.action,
      resource_type: input.resource_type,
      resource_id: input.resource_id ?? null,
      client_ids: [...new Set(input.client_ids)],
      details: input.details ?? {},
      ip: ctx.ip ?? null,
      user_agent: ctx.user_agent ?? null,
      request_id: ctx.request_id,
      created_at: new Date(this.clock.now()).toISOString(),
    };
    await publishEvent(this.nc, 'svc.evt.audit.recorded', entry, { msgId: entry.id });
  }
}
