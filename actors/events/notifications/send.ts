import { randomUUID } from 'node:crypto';
import { NotifyJob } from '../../../contracts/domains/events-notifications.ts';
import { streams } from '../../../contracts/streams.ts';
import {
  NonRetryableError,
  publishDurable,
  RetryLaterError,
  runConsumer,
  type ConsumerHandle,
} from '../../../platform/jetstream.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps } from '../deps.ts';
import { postJson } from './http-post.ts';
import { chatBody, emailOf, webhookBody } from './messages.ts';
import { call } from './voice-call.ts';
import { classifyAttempt, type AttemptOutcome } from './retry-policy.ts';
import { CHANNEL_COLUMNS, DELIVERY_COLUMNS, type ChannelRow, type DeliveryRow } from './rows.ts';
import { activeSecrets, signWebhook } from './webhook-signing.ts';

export const SENDER_DURABLE = 'events-notify-send';

type Attempt = { status_code: number | null; latency_ms: number; error: string | null };

const describe = (o: AttemptOutcome): string | null =>
  o.kind === 'response'
    ? o.status >= 200 && o.status < 300
      ? null
      : `the target answered ${o.status}`
    : o.kind === 'timeout'
      ? 'the target did not answer in time'
      : `the connection failed (${o.message})`;

type Settled = 'delivered' | 'failed' | 'pending';

async function recordAttempt(deps: EventsDeps, deliveryId: string, a: Attempt): Promise<void> {
  await sql(
    deps.orm.em.fork(),
    `INSERT INTO notification_attempts (id, delivery_id, at, status_code, latency_ms, error) VALUES (?, ?, now(), ?, ?, ?)`,
    [randomUUID(), deliveryId, a.status_code, a.latency_ms, a.error],
  );
}

/**
 * A pending delivery's outcome (a delivery already settled keeps its own). With `job`, only while that job is still the
 * delivery's own: a redelivery made meanwhile replaced it, and its new job settles it.
 */
async function settleDelivery(
  deps: EventsDeps,
  id: string,
  status: Settled,
  reason: string | null,
  job?: { job_id?: string | undefined },
): Promise<void> {
  const ofJob = job ? ` AND (job_id IS NULL OR job_id = ?::uuid)` : '';
  await sql(
    deps.orm.em.fork(),
    `UPDATE notification_deliveries SET status = ?, reason = ?, delivered_at = CASE WHEN ? = 'delivered' THEN now() ELSE delivered_at END, updated_at = now()
      WHERE id = ? AND status = 'pending'${ofJob}`,
    [status, reason, status, id, ...(job ? [job.job_id ?? null] : [])],
  );
}

/**
 * Sends deliveries, one job each. Each attempt is recorded (time, status, latency); 2xx delivers; timeouts, refused
 * connections, 429 and 5xx are retried with exponential backoff (a Retry-After lengthening the pause), any other
 * answer fails at once, and so does a target the URL rules refuse. A delivery is sent until it is delivered, and
 * not after: a job repeated after a crash finds it delivered and stops. Jobs of one channel never wait for another's:
 * a retry is a delayed redelivery, not a pause of the consumer.
 */
export function startSender(deps: EventsDeps): Promise<ConsumerHandle> {
  const c = deps.config;
  const policy = { allowHttp: c.SVC_NOTIFY_ALLOW_HTTP, allowPrivate: c.SVC_NOTIFY_ALLOW_PRIVATE };
  const record = (id: string, a: Attempt): Promise<void> => recordAttempt(deps, id, a);
  const settle = (id: string, status: Settled, reason: string | null): Promise<void> =>
    settleDelivery(deps, id, status, reason);

  return runConsumer({
    nc: deps.nc,
    stream: streams.SVC_WORK.name,
    durable: SENDER_DURABLE,
    filterSubjects: ['svc.work.events.notify'],
    schema: NotifyJob,
    concurrency: 32,
    maxAckPending: 20_000,
    // The policy decides when to stop; the spare deliveries cover crashes in between.
    maxDeliver: c.SVC_NOTIFY_MAX_ATTEMPTS + 3,
    ackWaitMs: c.SVC_NOTIFY_TIMEOUT_MS + 20_000,
    log: deps.log,
    onDeadLetter: async ({ payload, error }) => {
      // Its tries may outlast a redelivery made meanwhile, whose new job must not be failed by this one's error.
      if (payload) await settleDelivery(deps, payload.delivery_id, 'failed', error.slice(0, 500), payload);
    },
    handler: async ({ delivery_id, job_id }, meta) => {
      const em = deps.orm.em.fork();
      const [d] = await sql<DeliveryRow>(em, `SELECT ${DELIVERY_COLUMNS} FROM notification_deliveries WHERE id = ?`, [
        delivery_id,
      ]);
      // Published right after its insert: seen before it is visible only in a transaction not yet committed.
      if (!d && meta.deliveryCount < 5) throw new RetryLaterError('delivery not visible yet', 200 * meta.deliveryCount);
      if (!d || d.status !== 'pending') return;
      // Replaced by a redelivery's job while this one waited out a retry pause: that one sends, alone.
      if (d.job_id !== null && d.job_id !== job_id) return;
      const [channel] = await sql<ChannelRow>(em, `SELECT ${CHANNEL_COLUMNS} FROM notification_channels WHERE id = ?`, [
        d.channel_id,
      ]);
      if (!channel) return;
      const [{ n } = { n: 0 }] = await sql<{ n: number }>(
        em,
        `SELECT count(*)::int AS n FROM notification_attempts WHERE delivery_id = ? AND (?::timestamptz IS NULL OR at > ?::timestamptz)`,
        [d.id, d.redelivered_at, d.redelivered_at],
      );
      const attempt = n + 1;

      if (channel.kind === 'email') {
        const started = performance.now();
        for (const to of channel.addresses)
          await publishDurable(deps.nc, 'svc.work.email.send', emailOf(d.payload, to), {
            msgId: `notify-mail:${d.id}:${d.redelivered_at ? new Date(d.redelivered_at).getTime() : 0}:${attempt}:${to}`,
          });
        await record(d.id, { status_code: null, latency_ms: Math.round(performance.now() - started), error: null });
        await settle(d.id, 'delivered', null);
        return;
      }

      if (channel.kind === 'voice') {
        const started = performance.now();
        const latency = (): number => Math.round(performance.now() - started);
        try {
          await call(deps, d, channel, meta.log);
        } catch (err) {
          await record(d.id, { status_code: null, latency_ms: latency(), error: (err as Error).message.slice(0, 500) });
          if (err instanceof NonRetryableError) await settle(d.id, 'failed', err.message.slice(0, 500));
          throw err;
        }
        await record(d.id, { status_code: null, latency_ms: latency(), error: null });
        await settle(d.id, 'delivered', null);
        return;
      }

      const now = new Date(deps.clock.now());
      let body: string;
      let headers: Record<string, string> = {};
      if (channel.kind === 'webhook') {
        if (!channel.secret_enc) throw new NonRetryableError('the webhook channel has no signing secret');
        body = webhookBody(d.payload);
        const previous =
          channel.previous_secret_enc && channel.previous_secret_expires_at
            ? {
                secret: deps.box.open(channel.previous_secret_enc),
                expires_at: new Date(channel.previous_secret_expires_at),
              }
            : null;
        headers = signWebhook({
          id: d.id,
          timestamp: now,
          body,
          secrets: activeSecrets({ secret: deps.box.open(channel.secret_enc) }, previous, now),
        });
      } else {
        body = chatBody(d.payload);
      }
      const result = await postJson(channel.url ?? '', body, headers, { timeoutMs: c.SVC_NOTIFY_TIMEOUT_MS, policy });
      if (result.kind === 'refused') {
        await record(d.id, { status_code: null, latency_ms: result.latencyMs, error: result.reason });
        await settle(d.id, 'failed', result.reason);
        throw new NonRetryableError(`the target URL is refused: ${result.reason}`);
      }
      await record(d.id, {
        status_code: result.kind === 'response' ? result.status : null,
        latency_ms: result.latencyMs,
        error: describe(result),
      });
      const decision = classifyAttempt(result, attempt, {
        maxAttempts: c.SVC_NOTIFY_MAX_ATTEMPTS,
        baseMs: c.SVC_NOTIFY_RETRY_BASE_MS,
        capMs: c.SVC_NOTIFY_RETRY_CAP_MS,
        now,
      });
      if (decision.action === 'done') {
        await settle(d.id, 'delivered', null);
        return;
      }
      if (decision.action === 'dead') {
        await settle(d.id, 'failed', decision.reason);
        throw new NonRetryableError(decision.reason);
      }
      await sql(em, `UPDATE notification_deliveries SET reason = ?, updated_at = now() WHERE id = ?`, [
        decision.reason,
        d.id,
      ]);
      throw new RetryLaterError(decision.reason, decision.delayMs);
    },
  });
}
