import type { MikroORM } from '@mikro-orm/postgresql';
import type { NatsConnection } from '@nats-io/transport-node';
import { AuditEntry } from '../../contracts/streams.ts';
import { runConsumer, type ConsumerHandle } from '../../platform/jetstream.ts';
import type { Logger } from '../../platform/logger.ts';
import { pgJson, toPgArray } from '../../platform/stores/pg-values.ts';

export { AuditRecorder, type AuditInput } from '../../platform/audit.ts';

/** The audit actor: stores every recorded entry once (the entry id makes redelivery harmless). */
export function startAuditStore(nc: NatsConnection, orm: MikroORM, log: Logger): Promise<ConsumerHandle> {
  return runConsumer({
    nc,
    stream: 'SVC_EVENTS',
    durable: 'identity-audit-store',
    filterSubjects: ['svc.evt.audit.recorded'],
    schema: AuditEntry,
    concurrency: 4,
    // An entry that cannot be stored is a change missing from the audit log: alerted on, and replayable.
    alertOnDeadLetter: true,
    log,
    handler: async (e) => {
      await orm.em
        .fork()
        .getConnection()
        .execute(
          `INSERT INTO audit_log (id, actor_id, actor_email, actor_type, action, resource_type, resource_id, client_ids, details, ip_address, user_agent, request_id, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?::uuid[], ?::jsonb, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
          [
            e.id,
            e.actor_id,
            e.actor_email,
            e.actor_type,
            e.action,
            e.resource_type,
            e.resource_id,
            toPgArray(e.client_ids),
            pgJson(e.details),
            e.ip,
            e.user_agent,
            e.request_id,
            e.created_at,
          ],
        );
    },
  });
}
