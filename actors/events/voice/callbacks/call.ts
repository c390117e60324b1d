import { DomainError } from '../../../../contracts/errors.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import { GROUP_COLUMNS, type AlertGroupRow } from '../../records/alert-groups.ts';
import { validTwilioSignature, voiceConfig, type VoiceConfig } from '../twilio.ts';

/** What every callback shares: the signature check, the call it is about and its alert group, TwiML answers. */

export interface CallRow {
  id: string;
  /** A page's call is of an alert group; a voice channel's of a notification (exactly one of the two). */
  alert_group_id: string | null;
  notification_id: string | null;
  /** A voice channel's call: its delivery (a test call has no notification). */
  delivery_id: string | null;
  attempt: number;
  to_number: string;
  provider_sid: string | null;
  status: string;
}
export const CALL_COLUMNS =
  'id, alert_group_id, notification_id, delivery_id, attempt, to_number, provider_sid, status';

export const xml = (s: string): string =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
export const twiml = (body: string): { twiml: string } => ({
  twiml: `<?xml version="1.0" encoding="UTF-8"?><Response>${body}</Response>`,
});

export function verified(deps: EventsDeps, path: string, params: [string, string][], signature: string): VoiceConfig {
  const v = voiceConfig(deps.config);
  // Authentication first: without a provider no signature can be valid, so every caller gets the same 403 as a bad
  // signature, and nobody unauthenticated learns whether paging is configured.
  if (!v || !validTwilioSignature(v.authToken, `${v.publicUrl}${path}`, params, signature))
    throw new DomainError('forbidden', 'X-Twilio-Signature does not match this request');
  return v;
}

/** The call a callback is about: `?call=` of the URL we gave the provider, else its CallSid; then matched to it. */
export async function callOf(
  deps: EventsDeps,
  v: VoiceConfig,
  path: string,
  params: [string, string][],
): Promise<CallRow> {
  const byId = new URL(path, 'http://x').searchParams.get('call');
  const sid = params.find(([k]) => k === 'CallSid')?.[1];
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const [row] =
    byId !== null && UUID.test(byId)
      ? await sql<CallRow>(deps.orm.em.fork(), `SELECT ${CALL_COLUMNS} FROM voice_calls WHERE id = ?`, [byId])
      : sid
        ? await sql<CallRow>(deps.orm.em.fork(), `SELECT ${CALL_COLUMNS} FROM voice_calls WHERE provider_sid = ?`, [
            sid,
          ])
        : [];
  if (!row) throw new DomainError('not_found', 'call not found');
  return matched(v, row, params);
}

/**
 * The call itself, when the callback's CallSid and AccountSid are the ones it was placed with. A signature only says
 * the provider sent the request; without this, a callback of one call could act on another through the URL's id. A
 * call whose SID is not stored yet matches nothing.
 */
export function matched(v: VoiceConfig, call: CallRow, params: [string, string][]): CallRow {
  const field = (name: string) => params.find(([k]) => k === name)?.[1];
  if (field('AccountSid') !== v.accountSid)
    throw new DomainError('forbidden', 'AccountSid is not the account this call was placed from');
  if (call.provider_sid === null || field('CallSid') !== call.provider_sid)
    throw new DomainError('forbidden', 'CallSid is not the call this callback is for');
  return call;
}

export async function groupOf(
  deps: EventsDeps,
  id: string,
): Promise<AlertGroupRow & { alerts: { annotations: Record<string, string> }[] }> {
  const [g] = await sql<AlertGroupRow & { alerts: { annotations: Record<string, string> }[] }>(
    deps.orm.em.fork(),
    `SELECT ${GROUP_COLUMNS}, alerts FROM alert_groups WHERE id = ?`,
    [id],
  );
  if (!g) throw new DomainError('not_found', 'alert group not found');
  return g;
}

/** What a voice channel's call reads of its notification. */
interface CalledNotification {
  id: string;
  client_id: string;
  title: string;
  severity: string;
  status: string;
  acknowledged_at: string | null;
}

/** The notification a voice channel's call is about. */
export async function notificationOf(deps: EventsDeps, id: string): Promise<CalledNotification> {
  const [n] = await sql<CalledNotification>(
    deps.orm.em.fork(),
    `SELECT id, client_id, title, severity, status, acknowledged_at FROM notifications WHERE id = ?`,
    [id],
  );
  if (!n) throw new DomainError('not_found', 'notification not found');
  return n;
}
