import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { PageJob } from '../../../contracts/domains/events-records.ts';
import { streams } from '../../../contracts/streams.ts';
import {
  NonRetryableError,
  publishDurable,
  RetryLaterError,
  runConsumer,
  type ConsumerHandle,
} from '../../../platform/jetstream.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { windowOver } from '../notifications/incidents.ts';
import type { EventsDeps } from '../deps.ts';
import { callbackUrls, placeCall, VoiceProviderError, voiceConfig } from './twilio.ts';

export const PAGER_DURABLE = 'events-pager';

/**
 * Pages: one call per job through the voice provider, for an alert group still firing and not acknowledged. A job
 * waits for its `not_before` (the pause after an unanswered call); a call already placed for that attempt is never
 * placed twice (one row per group and attempt, the provider's SID stored once it answered).
 */
export function startPager(deps: EventsDeps): Promise<ConsumerHandle> {
  return runConsumer({
    nc: deps.nc,
    stream: streams.SVC_WORK.name,
    durable: PAGER_DURABLE,
    filterSubjects: ['svc.work.events.page'],
    schema: PageJob,
    concurrency: 4,
    maxDeliver: 12,
    backoffMs: [1_000, 5_000, 15_000, 30_000, 60_000],
    log: deps.log,
    handler: async (job, meta) => {
      // On the domain's clock, as the delivery that made the job stamped it.
      const wait = Date.parse(job.not_before) - deps.clock.now();
      if (wait > 0) throw new RetryLaterError('not yet: waiting before the next call', wait);
      const v = voiceConfig(deps.config);
      if (!v)
        throw new NonRetryableError(
          'no voice provider is configured (SVC_TWILIO_ACCOUNT_SID, SVC_TWILIO_AUTH_TOKEN, SVC_TWILIO_FROM)',
        );
      const em = deps.orm.em.fork();
      const [group] = await sql<{
        status: string;
        acknowledged_at: string | null;
        oncall_phone: string | null;
        client_id: string;
        environment_id: string | null;
        host_id: string | null;
        name: string;
      }>(
        em,
        `SELECT g.status, g.acknowledged_at, r.oncall_phone, g.client_id, g.environment_id, g.host_id, g.name
           FROM alert_groups g LEFT JOIN event_receivers r ON r.id = g.receiver_id WHERE g.id = ?`,
        [job.alert_group_id],
      );
      // The job is published inside the transaction that creates the group: it may arrive before that commits.
      if (!group && meta.deliveryCount < 5)
        throw new RetryLaterError('alert group not visible yet', 300 * meta.deliveryCount);
      if (!group || group.status !== 'firing' || group.acknowledged_at !== null || group.oncall_phone === null) {
        meta.log.info(
          { alert_group_id: job.alert_group_id, attempt: job.attempt },
          'page dropped: the alert group is resolved, acknowledged, gone, or has no on-call number',
        );
        return;
      }
      if (await heldByWindow(deps, em, job, group)) return;
      await sql(
        em,
        `INSERT INTO voice_calls (id, alert_group_id, attempt, to_number) VALUES (?, ?, ?, ?) ON CONFLICT (alert_group_id, attempt) DO NOTHING`,
        [job.call_id, job.alert_group_id, job.attempt, group.oncall_phone],
      );
      const [call] = await sql<{ id: string; provider_sid: string | null; to_number: string }>(
        em,
        `SELECT id, provider_sid, to_number FROM voice_calls WHERE alert_group_id = ? AND attempt = ?`,
        [job.alert_group_id, job.attempt],
      );
      if (!call || call.provider_sid !== null) return;
      const urls = callbackUrls(v, call.id);
      try {
        const placed = await placeCall(v, call.to_number, urls.twiml, urls.status);
        await sql(em, `UPDATE voice_calls SET provider_sid = ?, status = ?, updated_at = now() WHERE id = ?`, [
          placed.sid,
          placed.status,
          call.id,
        ]);
        meta.log.info(
          { alert_group_id: job.alert_group_id, attempt: job.attempt, call_sid: placed.sid },
          'on-call number paged',
        );
      } catch (err) {
        if (err instanceof VoiceProviderError && !err.transient) {
          await sql(em, `UPDATE voice_calls SET status = 'failed', updated_at = now() WHERE id = ?`, [call.id]);
          throw new NonRetryableError(err.message);
        }
        if (err instanceof VoiceProviderError && err.retryAfterMs !== undefined)
          throw new RetryLaterError(err.message, err.retryAfterMs);
        throw err;
      }
    },
  });
}

/** Schedules the next attempt of a page after an unanswered call, while attempts remain. */
export async function scheduleRetry(deps: EventsDeps, groupId: string, attempt: number): Promise<boolean> {
  if (attempt >= deps.config.SVC_TWILIO_MAX_ATTEMPTS) return false;
  const next = attempt + 1;
  await publishDurable(
    deps.nc,
    'svc.work.events.page',
    {
      alert_group_id: groupId,
      call_id: randomUUID(),
      attempt: next,
      not_before: new Date(deps.clock.now() + deps.config.SVC_TWILIO_RETRY_DELAY_SECONDS * 1000).toISOString(),
    },
    { msgId: `page:${groupId}:${next}` },
  );
  return true;
}

/**
 * A maintenance window over where the alert group sits holds its page back: the hold is on the timeline, and the
 * page is asked again when the window ends (then placed if the group still fires unacknowledged). A repeat of the
 * job after a crash cannot call twice: a call is one row per group and attempt.
 */
async function heldByWindow(
  deps: EventsDeps,
  em: EntityManager,
  job: PageJob,
  group: { client_id: string; environment_id: string | null; host_id: string | null; name: string },
): Promise<boolean> {
  const now = deps.clock.now();
  const held = await windowOver(em, group, new Date(now));
  if (!held) return false;
  const end = held.occurrence.end;
  await sql(
    em,
    `INSERT INTO timeline_events (id, source_key, client_id, environment_id, host_id, event_type, "timestamp", title, description)
     VALUES (?, ?, ?, ?, ?, 'notification', ?, ?, ?) ON CONFLICT (source_key) DO NOTHING`,
    [
      randomUUID(),
      `page-held:${job.alert_group_id}:${job.attempt}:${end.getTime()}`,
      group.client_id,
      group.environment_id,
      group.host_id,
      new Date(now),
      `Page held back: ${group.name}`,
      `The maintenance window “${held.window.name}” holds the on-call call until ${end.toISOString()}.`,
    ],
  );
  // Asked again at the window's end (at least a second on: a job never spins on a window about to end).
  await publishDurable(
    deps.nc,
    'svc.work.events.page',
    { ...job, not_before: new Date(Math.max(end.getTime(), now + 1_000)).toISOString() },
    { msgId: `page:${job.alert_group_id}:${job.attempt}:held:${randomUUID()}` },
  );
  return true;
}
