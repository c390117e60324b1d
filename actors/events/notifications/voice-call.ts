import { NonRetryableError, RetryLaterError } from '../../../platform/jetstream.ts';
import type { Logger } from '../../../platform/logger.ts';
import { sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps } from '../deps.ts';
import { callbackUrls, placeCall, VoiceProviderError, voiceConfig } from '../voice/twilio.ts';
import { derivedId } from './derived-id.ts';
import type { ChannelRow, DeliveryRow } from './rows.ts';

/**
 * A voice channel's delivery: one call through the voice provider, recorded in `voice_calls` under the delivery's id
 * (placed once: a repeated job finds its SID stored). The call's TwiML reads the message and asks for digit 1, which
 * acknowledges the notification (actors/events/voice/callbacks). A call the provider refuses for good fails the
 * delivery; its 429 and 5xx are retried.
 */
export async function call(deps: EventsDeps, d: DeliveryRow, channel: ChannelRow, log: Logger): Promise<void> {
  const v = voiceConfig(deps.config);
  if (!v)
    throw new NonRetryableError(
      'no voice provider is configured (SVC_TWILIO_ACCOUNT_SID, SVC_TWILIO_AUTH_TOKEN, SVC_TWILIO_FROM)',
    );
  if (channel.phone === null) throw new NonRetryableError('the voice channel has no phone number');
  const em = deps.orm.em.fork();
  // One call per sending: the delivery's id, or after a redelivery an id fixed by the delivery and that redelivery.
  const id = d.redelivered_at ? derivedId(`${d.id}@${new Date(d.redelivered_at).toISOString()}`) : d.id;
  await sql(
    em,
    `INSERT INTO voice_calls (id, notification_id, delivery_id, attempt, to_number, status) VALUES (?, ?, ?, 1, ?, 'placing') ON CONFLICT (id) DO NOTHING`,
    [id, d.notification_id, d.id, channel.phone],
  );
  const [row] = await sql<{ provider_sid: string | null }>(em, `SELECT provider_sid FROM voice_calls WHERE id = ?`, [
    id,
  ]);
  if (row?.provider_sid) return;
  const urls = callbackUrls(v, id);
  try {
    const placed = await placeCall(v, channel.phone, urls.twiml, urls.status);
    await sql(em, `UPDATE voice_calls SET provider_sid = ?, status = ?, updated_at = now() WHERE id = ?`, [
      placed.sid,
      placed.status,
      id,
    ]);
    log.info({ delivery_id: d.id, call_sid: placed.sid }, 'notification phoned');
  } catch (err) {
    if (err instanceof VoiceProviderError && !err.transient) {
      await sql(em, `UPDATE voice_calls SET status = 'failed', updated_at = now() WHERE id = ?`, [id]);
      throw new NonRetryableError(err.message);
    }
    if (err instanceof VoiceProviderError && err.retryAfterMs !== undefined)
      throw new RetryLaterError(err.message, err.retryAfterMs);
    throw err;
  }
}
