import { randomUUID } from 'node:crypto';
import { anonymousContext } from '../../../contracts/context.ts';
import { DeliveryJob, type AlertFacts } from '../../../contracts/domains/events-records.ts';
import { streams } from '../../../contracts/streams.ts';
import {
  publishDurable,
  publishEvent,
  runConsumer,
  type ConsumerHandle,
  type DeliveryMeta,
} from '../../../platform/jetstream.ts';
import { sqlStateOf } from '../../../platform/store-errors.ts';
import { iso, sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps } from '../deps.ts';
import { voiceConfigured } from '../voice/twilio.ts';
import { applyNotification, changedEvent, type Placement } from './alert-groups.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

export const DELIVERIES_DURABLE = 'events-deliveries';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Stores what the receivers accepted: deploys (once per sender delivery id), alert groups (fired, updated, resolved;
 * a critical group that fires on a source with an on-call number pages it), and rejected deliveries. Each change is
 * published as an event before the delivery is acknowledged (for alert groups, before their transaction commits), so a
 * failed publish retries the delivery. A delivery whose client or receiver was deleted meanwhile is dropped.
 */
export function startDeliveryConsumer(deps: EventsDeps): Promise<ConsumerHandle> {
  return runConsumer({
    nc: deps.nc,
    stream: streams.SVC_WORK.name,
    durable: DELIVERIES_DURABLE,
    filterSubjects: ['svc.work.events.delivery'],
    schema: DeliveryJob,
    concurrency: 16,
    maxAckPending: 5_000,
    maxDeliver: 8,
    backoffMs: [500, 2_000, 10_000, 30_000, 60_000],
    log: deps.log,
    handler: async (job, meta) => {
      try {
        if (job.outcome.kind === 'deploy') await storeDeploy(deps, job, job.outcome.deploy);
        else if (job.outcome.kind === 'alert') await storeAlert(deps, job, job.outcome.alert, meta);
        else await storeRejected(deps, job, job.outcome.rejected);
      } catch (err) {
        // A foreign key refused: the client, environment or receiver is gone. Nothing left to attach the delivery to.
        if (sqlStateOf(err) === '23503') {
          meta.log.info(
            { receiver_id: job.receiver_id },
            'delivery dropped: its client, environment or receiver was deleted',
          );
          return;
        }
        throw err;
      }
      // At most one write a second per receiver: enough for "last delivery", cheap under a flood.
      await sql(
        deps.orm.em.fork(),
        `UPDATE event_receivers SET last_delivery_at = ? WHERE id = ? AND (last_delivery_at IS NULL OR last_delivery_at < ?::timestamptz - interval '1 second')`,
        [job.received_at, job.receiver_id, job.received_at],
      );
    },
  });
}

async function storeDeploy(
  deps: EventsDeps,
  job: DeliveryJob,
  d: Extract<DeliveryJob['outcome'], { kind: 'deploy' }>['deploy'],
): Promise<void> {
  const source = job.source;
  if (source === 'alertmanager') return;
  const em = deps.orm.em.fork();
  const dedupe = `${job.receiver_id}:${job.external_id}`;
  type Stored = { id: string; client_id: string; environment_id: string | null; at: string };
  const [inserted] = await sql<Stored>(
    em,
    `INSERT INTO deploys (id, receiver_id, client_id, environment_id, source, event_type, summary, app, revision, url, failed, at, dedupe_key)
     VALUES (?, (SELECT id FROM event_receivers WHERE id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING
     RETURNING id, client_id, environment_id, at`,
    [
      job.delivery_id,
      job.receiver_id,
      job.client_id,
      job.environment_id,
      source,
      d.event_type,
      d.summary,
      d.app,
      d.revision,
      d.url,
      d.failed,
      d.at,
      dedupe,
    ],
  );
  // No transaction needed: the event is announced for the stored row whether this delivery stored it or found it (a
  // repeat, or a redelivery after a crash between the insert and the publish); the stream drops a repeat within its
  // window (message id) and the timeline's key drops a later one.
  const [row] = inserted
    ? [inserted]
    : await sql<Stored>(em, `SELECT id, client_id, environment_id, at FROM deploys WHERE dedupe_key = ?`, [dedupe]);
  if (!row) return;
  await publishEvent(
    deps.nc,
    'svc.evt.events.deploy',
    { ...d, id: row.id, client_id: row.client_id, environment_id: row.environment_id, source, at: iso(row.at) },
    { msgId: `deploy:${row.id}` },
  );
}

/** Where the alert happened: a `host_id` label of the client, else an instance / hostname the fleet recognises. */
async function placeAlert(deps: EventsDeps, job: DeliveryJob, a: AlertFacts): Promise<Placement> {
  const ctx = anonymousContext(`events-delivery:${job.delivery_id}`);
  const fits = (h: { client_id: string; environment_id: string }): boolean =>
    h.client_id === job.client_id && (job.environment_id === null || h.environment_id === job.environment_id);
  const ids = a.host_ids.filter((id) => UUID.test(id)).map((id) => id.toLowerCase());
  if (ids.length > 0) {
    const found = await deps.fleet.resolve(ctx, { hosts: ids.slice(0, 200) });
    const hosts = [...new Set(ids)]
      .map((id) => found.get(`host:${id}`))
      .flatMap((h) => (h?.kind === 'host' && fits(h.value) ? [h.value] : []));
    if (hosts.length === 1) return { environment_id: hosts[0]!.environment_id, host_id: hosts[0]!.id };
    if (hosts.length > 1) return { environment_id: job.environment_id, host_id: null };
  }
  if (a.host_names.length > 0 && a.host_names.length <= 10) {
    const host = await deps.fleet.matchHost(ctx, job.client_id, job.environment_id, a.host_names);
    if (host) return { environment_id: host.environment_id, host_id: host.id };
  }
  return { environment_id: job.environment_id, host_id: null };
}

async function storeAlert(deps: EventsDeps, job: DeliveryJob, a: AlertFacts, meta: DeliveryMeta): Promise<void> {
  const place = await placeAlert(deps, job, a);
  await deps.orm.em.fork().transactional(async (tx) => {
    const [receiver] = await sql<{ oncall_phone: string | null }>(
      tx,
      `SELECT oncall_phone FROM event_receivers WHERE id = ?`,
      [job.receiver_id],
    );
    if (!receiver) return; // removed since the delivery was accepted
    const { group, change } = await applyNotification(tx, job, a, place);
    if (change === null) return;
    const at = change === 'fired' ? iso(group.fired_at) : iso(group.resolved_at ?? job.received_at);
    await publishEvent(
      deps.nc,
      'svc.evt.events.alert',
      changedEvent(
        group,
        change,
        at,
        null,
        a.alerts.map((x) => x.labels),
      ),
      {
        msgId: `alert:${group.id}:${change}`,
      },
    );
    if (change === 'fired' && group.severity.toLowerCase() === 'critical' && receiver.oncall_phone !== null) {
      if (!voiceConfigured(deps.config)) {
        meta.log.warn(
          { alert_group_id: group.id },
          'critical alert on a source with an on-call number, but no voice provider is configured (SVC_TWILIO_*): no call placed',
        );
        return;
      }
      await publishDurable(
        deps.nc,
        'svc.work.events.page',
        { alert_group_id: group.id, call_id: randomUUID(), attempt: 1, not_before: job.received_at },
        { msgId: `page:${group.id}:1` },
      );
    }
  });
}

async function storeRejected(
  deps: EventsDeps,
  job: DeliveryJob,
  r: Extract<DeliveryJob['outcome'], { kind: 'rejected' }>['rejected'],
): Promise<void> {
  await sql(
    deps.orm.em.fork(),
    `INSERT INTO rejected_deliveries (id, receiver_id, source, event, reason, external_id, headers, body_excerpt, received_at)
     VALUES (?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?) ON CONFLICT (id) DO NOTHING`,
    [
      job.delivery_id,
      job.receiver_id,
      job.source,
      job.event,
      r.reason,
      job.external_id,
      pgJson(r.headers),
      r.body_excerpt,
      job.received_at,
    ],
  );
}
