import { publishEvent } from '../../../../platform/jetstream.ts';
import { iso, sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { changedEvent, GROUP_COLUMNS, type AlertGroupRow } from '../../records/alert-groups.ts';
import { callbackUrls } from '../twilio.ts';
import { acknowledge } from '../../notifications/incidents.ts';
import { callOf, twiml, verified, xml } from './call.ts';

/**
 * The key pressed during a call: 1 acknowledges the alert group or the notification (once, by phone); any other key
 * repeats the prompt.
 */
export function gatherHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.voice.gather': async ({ path, params, signature }, { ctx }) => {
      const v = verified(deps, path, params, signature);
      const call = await callOf(deps, v, path, params);
      const digits = params.find(([k]) => k === 'Digits')?.[1] ?? '';
      await sql(deps.orm.em.fork(), `UPDATE voice_calls SET digits = ?, updated_at = now() WHERE id = ?`, [
        digits.slice(0, 32),
        call.id,
      ]);
      if (digits !== '1')
        return twiml(
          `<Say>That key does nothing.</Say><Redirect method="POST">${xml(callbackUrls(v, call.id).twiml)}</Redirect>`,
        );
      if (call.alert_group_id === null && call.notification_id === null)
        return twiml('<Say>This was a test call. Goodbye.</Say><Hangup/>');
      if (call.notification_id !== null) {
        const done = await acknowledge(deps, call.notification_id, `phone:${call.to_number}`);
        if (done?.now)
          await deps.audit.record(ctx, {
            action: 'notification.acknowledged',
            resource_type: 'notification',
            resource_id: call.notification_id,
            client_ids: [done.row.client_id],
            details: { title: done.row.title, via: 'phone', phone: call.to_number, call_sid: call.provider_sid },
          });
        return twiml('<Say>Notification acknowledged. Goodbye.</Say><Hangup/>');
      }
      const at = new Date(deps.clock.now()).toISOString();
      const acknowledged = await deps.orm.em.fork().transactional(async (tx) => {
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
  };
}
