import { DomainError } from '../../../contracts/errors.ts';
import { publishEvent } from '../../../platform/jetstream.ts';
import { iso, sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { changedEvent, GROUP_COLUMNS, type AlertGroupRow } from '../records/alert-groups.ts';
import { scheduleRetry } from './pager.ts';
import { callbackUrls, validTwilioSignature, voiceConfig, type VoiceConfig } from './twilio.ts';

/**
 * The voice provider's callbacks (`POST /api/v1/twilio/voice/twiml/{callID}`, `…/voice/gather`, `…/voice/status`):
 * every one is checked against `X-Twilio-Signature` over the public URL it was sent to (SVC_BACKEND_URL + path and
 * query) and its form parameters, before anything is read or written; a bad signature is 403. A signed callback is
 * then matched to the call it names: its `CallSid` and `AccountSid` must be the ones of the call we placed (the
 * provider identifies a call by them, not by our URL), else 403 and nothing changes.
 */

interface CallRow {
  id: string;
  alert_group_id: string;
  attempt: number;
  to_number: string;
  provider_sid: string | null;
  status: string;
}
const CALL_COLUMNS = 'id, alert_group_id, attempt, to_number, provider_sid, status';

/** Call outcomes after which nobody listened (the provider's CallStatus values). */
const UNANSWERED = new Set(['busy', 'no-answer', 'failed', 'canceled']);
const FINAL = new Set(['completed', ...UNANSWERED]);

const xml = (s: string): string =>
  s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
const twiml = (body: string): { twiml: string } => ({
  twiml: `<?xml version="1.0" encoding="UTF-8"?><Response>${body}</Response>`,
});

export function voiceHandlers(deps: EventsDeps): EventsHandlers {
  const fork = () => deps.orm.em.fork();

  function verified(path: string, params: [string, string][], signature: string): VoiceConfig {
    const v = voiceConfig(deps.config);
    // Authentication first: without a provider no signature can be valid, so every caller gets the same 403 as a bad
    // signature, and nobody unauthenticated learns whether paging is configured.
    if (!v || !validTwilioSignature(v.authToken, `${v.publicUrl}${path}`, params, signature))
      throw new DomainError('forbidden', 'X-Twilio-Signature does not match this request');
    return v;
  }

  /** The call a callback is about: `?call=` of the URL we gave the provider, else its CallSid; then matched to it. */
  async function callOf(v: VoiceConfig, path: string, params: [string, string][]): Promise<CallRow> {
    const byId = new URL(path, 'http://x').searchParams.get('call');
    const sid = params.find(([k]) => k === 'CallSid')?.[1];
    const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
    const [row] =
      byId !== null && UUID.test(byId)
        ? await sql<CallRow>(fork(), `SELECT ${CALL_COLUMNS} FROM voice_calls WHERE id = ?`, [byId])
        : sid
          ? await sql<CallRow>(fork(), `SELECT ${CALL_COLUMNS} FROM voice_calls WHERE provider_sid = ?`, [sid])
          : [];
    if (!row) throw new DomainError('not_found', 'call not found');
    return matched(v, row, params);
  }

  /**
   * The call itself, when the callback's CallSid and AccountSid are the ones it was placed with. A signature only says
   * the provider sent the request; without this, a callback of one call could act on another through the URL's id. A
   * call whose SID is not stored yet matches nothing.
   */
  function matched(v: VoiceConfig, call: CallRow, params: [string, string][]): CallRow {
    const field = (name: string) => params.find(([k]) => k === name)?.[1];
    if (field('AccountSid') !== v.accountSid)
      throw new DomainError('forbidden', 'AccountSid is not the account this call was placed from');
    if (call.provider_sid === null || field('CallSid') !== call.provider_sid)
      throw new DomainError('forbidden', 'CallSid is not the call this callback is for');
    return call;
  }

  async function groupOf(id: string): Promise<AlertGroupRow & { alerts: { annotations: Record<string, string> }[] }> {
    const [g] = await sql<AlertGroupRow & { alerts: { annotations: Record<string, string> }[] }>(
      fork(),
      `SELECT ${GROUP_COLUMNS}, alerts FROM alert_groups WHERE id = ?`,
      [id],
    );
    if (!g) throw new DomainError('not_found', 'alert group not found');
    return g;
  }

  return {
    'svc.events.voice.twiml': async ({ call_id, path, params, signature }) => {
      const v = verified(path, params, signature);
      const [row] = await sql<CallRow>(fork(), `SELECT ${CALL_COLUMNS} FROM voice_calls WHERE id = ?`, [call_id]);
      if (!row) throw new DomainError('not_found', 'call not found');
      const call = matched(v, row, params);
      const g = await groupOf(call.alert_group_id);
      const summary = g.alerts[0]?.annotations.summary ?? g.alerts[0]?.annotations.description ?? '';
      const state =
        g.status === 'resolved'
          ? 'It has been resolved.'
          : g.acknowledged_at
            ? 'It is already acknowledged.'
            : 'It is firing.';
      const say = `Alert: ${g.name}. Severity ${g.severity}. ${summary ? `${summary}. ` : ''}${state} Press 1 to acknowledge.`;
      const gather = callbackUrls(v, call.id).gather;
      return twiml(
        `<Gather numDigits="1" timeout="10" method="POST" action="${xml(gather)}"><Say>${xml(say)}</Say></Gather><Say>No key was pressed. Goodbye.</Say>`,
      );
    },

    'svc.events.voice.gather': async ({ path, params, signature }, { ctx }) => {
      const v = verified(path, params, signature);
      const call = await callOf(v, path, params);
      const digits = params.find(([k]) => k === 'Digits')?.[1] ?? '';
      await sql(fork(), `UPDATE voice_calls SET digits = ?, updated_at = now() WHERE id = ?`, [
        digits.slice(0, 32),
        call.id,
      ]);
      if (digits !== '1')
        return twiml(
          `<Say>That key does nothing.</Say><Redirect method="POST">${xml(callbackUrls(v, call.id).twiml)}</Redirect>`,
        );
      const at = new Date(deps.clock.now()).toISOString();
      const acknowledged = await fork().transactional(async (tx) => {
        const [g] = await sql<AlertGroupRow>(
          tx,
          `UPDATE alert_groups SET acknowledged_at = ?, acknowledged_by = ?, updated_at = now() WHERE id = ? AND acknowledged_at IS NULL RETURNING ${GROUP_COLUMNS}`,
          [at, `phone:${call.to_number}`, call.alert_group_id],
        );
        // Shown on the timeline: published before the commit, so a failed publish leaves the group unacknowledged.
        if (g)
          await publishEvent(
            deps.nc,
            'svc.evt.events.alert',
            changedEvent(g, 'acknowledged', at, `phone:${call.to_number}`),
            { msgId: `alert:${g.id}:acknowledged` },
          );
        return g;
      });
      if (acknowledged) {
        await deps.audit.record(ctx, {
          action: 'alert.acknowledged',
          resource_type: 'alert_group',
          resource_id: acknowledged.id,
          client_ids: [acknowledged.client_id],
          details: {
            via: 'phone',
            phone: call.to_number,
            call_id: call.id,
            call_sid: call.provider_sid,
            attempt: call.attempt,
            name: acknowledged.name,
            fired_at: iso(acknowledged.fired_at),
          },
        });
      }
      return twiml('<Say>Alert acknowledged. Goodbye.</Say><Hangup/>');
    },

    'svc.events.voice.status': async ({ path, params, signature }) => {
      const v = verified(path, params, signature);
      const call = await callOf(v, path, params);
      const status = (params.find(([k]) => k === 'CallStatus')?.[1] ?? '').slice(0, 32);
      if (status === '') throw new DomainError('bad_request', 'CallStatus is missing');
      // Only the first final outcome counts: a repeated callback never schedules a second retry.
      const [updated] = await sql<{ id: string }>(
        fork(),
        `UPDATE voice_calls SET status = ?, updated_at = now() WHERE id = ? AND status NOT IN ('completed', 'busy', 'no-answer', 'failed', 'canceled') RETURNING id`,
        [status, call.id],
      );
      if (!updated || !FINAL.has(status)) return {};
      const g = await groupOf(call.alert_group_id);
      // Unanswered, or answered without the acknowledging key: call again while the group still fires.
      if (g.status === 'firing' && g.acknowledged_at === null && (UNANSWERED.has(status) || status === 'completed'))
        await scheduleRetry(deps, g.id, call.attempt);
      return {};
    },
  };
}
