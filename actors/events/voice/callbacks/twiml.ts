import { DomainError } from '../../../../contracts/errors.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { callbackUrls } from '../twilio.ts';
import { CALL_COLUMNS, groupOf, matched, notificationOf, twiml, verified, xml, type CallRow } from './call.ts';

/** What an answered call says: the alert group or notification, its state, and a prompt to press 1 to acknowledge. */
export function twimlHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.voice.twiml': async ({ call_id, path, params, signature }) => {
      const v = verified(deps, path, params, signature);
      const [row] = await sql<CallRow>(deps.orm.em.fork(), `SELECT ${CALL_COLUMNS} FROM voice_calls WHERE id = ?`, [
        call_id,
      ]);
      if (!row) throw new DomainError('not_found', 'call not found');
      const call = matched(v, row, params);
      const gather = callbackUrls(v, call.id).gather;
      const ask = (say: string) =>
        twiml(
          `<Gather numDigits="1" timeout="10" method="POST" action="${xml(gather)}"><Say>${xml(say)}</Say></Gather><Say>No key was pressed. Goodbye.</Say>`,
        );
      if (call.alert_group_id === null && call.notification_id === null) {
        // A voice channel's test call: it reads the test message, nothing to acknowledge.
        const [d] = await sql<{ payload: { title?: string } }>(
          deps.orm.em.fork(),
          `SELECT payload FROM notification_deliveries WHERE id = ?`,
          [call.delivery_id],
        );
        return twiml(`<Say>${xml(d?.payload.title ?? 'Test notification')}. It reaches you. Goodbye.</Say><Hangup/>`);
      }
      if (call.alert_group_id === null) {
        const n = await notificationOf(deps, call.notification_id!);
        const state =
          n.status === 'resolved'
            ? 'It has been resolved.'
            : n.acknowledged_at
              ? 'It is already acknowledged.'
              : 'It is still happening.';
        return ask(`Notification: ${n.title}. Severity ${n.severity}. ${state} Press 1 to acknowledge.`);
      }
      const g = await groupOf(deps, call.alert_group_id);
      const summary = g.alerts[0]?.annotations.summary ?? g.alerts[0]?.annotations.description ?? '';
      const state =
        g.status === 'resolved'
          ? 'It has been resolved.'
          : g.acknowledged_at
            ? 'It is already acknowledged.'
            : 'It is firing.';
      return ask(
        `Alert: ${g.name}. Severity ${g.severity}. ${summary ? `${summary}. ` : ''}${state} Press 1 to acknowledge.`,
      );
    },
  };
}
