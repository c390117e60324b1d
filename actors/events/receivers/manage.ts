import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { createReceiver } from './manage/create.ts';
import { removeReceiver } from './manage/delete.ts';
import { listReceivers } from './manage/list.ts';
import { rejectedDeliveries } from './manage/rejected.ts';
import { alertOut, issued, loadReceiver, webhookOut } from './manage/rows.ts';
import { updateReceiver } from './manage/update.ts';

/**
 * Webhook endpoints (`webhooks:*`) and alert sources (`alertsources:*`): one table, two resources. A receiver belongs
 * to one client, optionally one of its environments, and one source; its token is shown once (with the receiver URL)
 * and stored hashed; its shared secret, when set, is sealed (AES-256-GCM) and never shown again. Each operation is in
 * manage/, in a file named after it, for both kinds; manage/rows.ts holds the stored row and what the operations share.
 */
export function receiverHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.webhook_endpoints.list': async (q, s) => {
      const page = await listReceivers(deps, 'webhook')(q, s);
      return { ...page, items: page.items.map(webhookOut) };
    },
    'svc.events.webhook_endpoints.get': async ({ id }, { ctx }) =>
      webhookOut(await loadReceiver(deps.orm.em.fork(), ctx, 'webhook', id, 'read')),
    'svc.events.webhook_endpoints.create': async (b, scope) => {
      const { row, token } = await createReceiver(deps, 'webhook', b, scope);
      return issued(deps, webhookOut(row), row, token);
    },
    'svc.events.webhook_endpoints.update': async (b, scope) => {
      const { row, token } = await updateReceiver(deps, 'webhook', b, scope);
      return issued(deps, webhookOut(row), row, token);
    },
    'svc.events.webhook_endpoints.delete': async ({ id }, { ctx }) => removeReceiver(deps, 'webhook', id, ctx),
    'svc.events.webhook_endpoints.rejected': rejectedDeliveries(deps, 'webhook'),

    'svc.events.alert_sources.list': async (q, s) => {
      const page = await listReceivers(deps, 'alert')(q, s);
      return { ...page, items: page.items.map(alertOut) };
    },
    'svc.events.alert_sources.get': async ({ id }, { ctx }) =>
      alertOut(await loadReceiver(deps.orm.em.fork(), ctx, 'alert', id, 'read')),
    'svc.events.alert_sources.create': async (b, scope) => {
      const { row, token } = await createReceiver(deps, 'alert', b, scope);
      return issued(deps, alertOut(row), row, token);
    },
    'svc.events.alert_sources.update': async (b, scope) => {
      const { row, token } = await updateReceiver(deps, 'alert', b, scope);
      return issued(deps, alertOut(row), row, token);
    },
    'svc.events.alert_sources.delete': async ({ id }, { ctx }) => removeReceiver(deps, 'alert', id, ctx),
    'svc.events.alert_sources.rejected': rejectedDeliveries(deps, 'alert'),
  };
}
