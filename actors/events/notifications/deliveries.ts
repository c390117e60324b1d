import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { NotificationDelivery } from '../../../contracts/domains/events-notifications.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { publishDurable } from '../../../platform/jetstream.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { DELIVERY_COLUMNS, deliveriesOut, loadOwned, WRITE, type DeliveryRow, type MessagePayload } from './rows.ts';

/** One delivery to make: to which channel, of what, and whether a maintenance window holds it back (the reason). */
export interface DeliverySpec {
  channel_id: string;
  client_id: string;
  notification_id: string | null;
  kind: NotificationDelivery['kind'];
  step: number;
  /** Unique per notification, channel and message: the same spec twice makes one delivery. */
  dedupe_key: string;
  suppressed: string | null;
  payload: MessagePayload;
  /** A test goes to a disabled channel too (to try it before enabling it); everything else only to enabled ones. */
  evenDisabled?: boolean;
}

/** Publishes a pending delivery's send job; the job's id is the message id, so a repeat within the window is one job. */
export const publishSend = (deps: EventsDeps, deliveryId: string, jobId: string): Promise<unknown> =>
  publishDurable(
    deps.nc,
    'svc.work.events.notify',
    { delivery_id: deliveryId, job_id: jobId },
    { msgId: `notify:${jobId}` },
  );

/**
 * Records deliveries (suppressed ones as such, never sent) and publishes a send job for each pending one. A spec made
 * before (same dedupe key) is not made again, but its job is published again while it is pending: after a crash
 * between the insert and the publish, the redelivered event finishes the work.
 */
export async function enqueueDeliveries(
  deps: EventsDeps,
  em: EntityManager,
  specs: DeliverySpec[],
): Promise<DeliveryRow[]> {
  const rows: DeliveryRow[] = [];
  for (const s of specs) {
    const [row] = await sql<DeliveryRow>(
      em,
      `INSERT INTO notification_deliveries (id, client_id, channel_id, notification_id, kind, step, dedupe_key, status, reason, payload, job_id)
       SELECT ?, ?, c.id, ?, ?, ?, ?, ?, ?, ?::jsonb, gen_random_uuid() FROM notification_channels c WHERE c.id = ? AND c.client_id = ? AND (c.enabled OR ?)
       ON CONFLICT (dedupe_key) DO UPDATE SET updated_at = notification_deliveries.updated_at
       RETURNING ${DELIVERY_COLUMNS}`,
      [
        randomUUID(),
        s.client_id,
        s.notification_id,
        s.kind,
        s.step,
        s.dedupe_key,
        s.suppressed === null ? 'pending' : 'suppressed',
        s.suppressed,
        pgJson(s.payload),
        s.channel_id,
        s.client_id,
        s.evenDisabled === true,
      ],
    );
    // A channel deleted or disabled meanwhile (or of another client) gets nothing.
    if (row) rows.push(row);
  }
  // A delivery made before jobs were named is sent by a job named after it.
  for (const r of rows) if (r.status === 'pending') await publishSend(deps, r.id, r.job_id ?? r.id);
  return rows;
}

export function deliveryHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.notification_deliveries.redeliver': async ({ id }, { ctx }) => {
      const em = deps.orm.em.fork();
      const current = await loadOwned<DeliveryRow>(
        em,
        ctx,
        'notification_deliveries',
        DELIVERY_COLUMNS,
        id,
        WRITE,
        'notification delivery',
      );
      // One redelivery at a time: a delivery still being sent is refused, unless its job was lost (no change for a
      // minute: a publish that failed after the row was set pending).
      const [row] = await sql<DeliveryRow>(
        em,
        `UPDATE notification_deliveries SET status = 'pending', reason = NULL, redelivered_at = now(), job_id = ?, updated_at = now()
          WHERE id = ? AND (status <> 'pending' OR updated_at < now() - interval '1 minute') RETURNING ${DELIVERY_COLUMNS}`,
        [randomUUID(), id],
      );
      if (!row) throw new DomainError('bad_request', 'the delivery is still being sent: wait for its outcome first');
      // The new job replaces any still waiting out a retry pause (the sender stops those).
      await publishSend(deps, id, row.job_id!);
      await deps.audit.record(ctx, {
        action: 'notification_delivery.redelivered',
        resource_type: 'notification_delivery',
        resource_id: id,
        client_ids: [current.client_id],
        details: { channel_id: current.channel_id, previous_status: current.status },
      });
      return (await deliveriesOut(em, [row]))[0]!;
    },
  };
}
