import { DomainError } from '../../../contracts/errors.ts';
import type { ConsumerHandle } from '../../../platform/jetstream.ts';
import { pageOf } from '../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { AckLinks } from './ack-link.ts';
import { channelHandlers } from './channels.ts';
import { startChecks } from './checks.ts';
import { deliveryHandlers } from './deliveries.ts';
import { acknowledge, type NotifyDeps } from './incidents.ts';
import {
  canReadSource,
  clientFilter,
  emptyPage,
  loadOwned,
  NOTIFICATION_COLUMNS,
  notificationOut,
  READ,
  sourceFilter,
  WRITE,
  type NotificationRow,
} from './rows.ts';
import { ruleHandlers } from './rules.ts';
import { startSender } from './send.ts';
import { startSources } from './sources.ts';
import { windowHandlers } from './windows.ts';

/**
 * Notifications, a capability of the events domain (docs/api/notifications.md): the subjects that manage channels,
 * rules and maintenance windows and read and acknowledge notifications, and the consumers that turn events into
 * notifications (sources.ts), look again later (checks.ts) and send (send.ts).
 */
export function notificationHandlers(deps: EventsDeps): EventsHandlers {
  const ack = new AckLinks(deps.config);
  const load = (em = deps.orm.em.fork()) => ({
    em,
    one: async (ctx: Parameters<typeof loadOwned>[1], id: string, perm: string) => {
      const row = await loadOwned<NotificationRow>(
        em,
        ctx,
        'notifications',
        NOTIFICATION_COLUMNS,
        id,
        perm,
        'notification',
      );
      // What its source's permission would not show is not there for this caller.
      if (!canReadSource(ctx, row)) throw new DomainError('not_found', 'notification not found');
      return row;
    },
  });
  return {
    ...channelHandlers(deps),
    ...deliveryHandlers(deps),
    ...ruleHandlers(deps),
    ...windowHandlers(deps),

    'svc.events.notifications.list': async (q, { ctx }) => {
      const params: unknown[] = [];
      const where = clientFilter(ctx, q.client_id, params);
      if (where === null) return emptyPage(q);
      const parts = [where, sourceFilter(ctx, params)];
      if (q.status !== undefined) {
        parts.push('status = ?');
        params.push(q.status);
      }
      if (q.host_id !== undefined) {
        parts.push('(host_id = ? OR place_host_id = ?)');
        params.push(q.host_id, q.host_id);
      }
      return pageOf(
        deps.orm.em.fork(),
        {
          columns: NOTIFICATION_COLUMNS,
          from: `notifications WHERE ${parts.join(' AND ')}`,
          params,
          order: 'first_at DESC, id DESC',
        },
        q,
        (rows: NotificationRow[]) => rows.map(notificationOut),
      );
    },

    'svc.events.notifications.get': async ({ id }, { ctx }) => notificationOut(await load().one(ctx, id, READ)),

    'svc.events.notifications.acknowledge': async ({ id }, { ctx }) => {
      const row = await load().one(ctx, id, WRITE);
      const by =
        ctx.principal.kind === 'user'
          ? ctx.principal.email
          : ctx.principal.kind === 'service_account'
            ? `service-account:${ctx.principal.name}`
            : 'unknown';
      const done = await acknowledge(deps, id, by);
      if (!done) throw new DomainError('not_found', 'notification not found');
      if (done.now)
        await deps.audit.record(ctx, {
          action: 'notification.acknowledged',
          resource_type: 'notification',
          resource_id: id,
          client_ids: [row.client_id],
          details: { title: row.title },
        });
      return notificationOut(done.row);
    },

    'svc.events.notifications.acknowledge_link': async ({ token }, { ctx }) => {
      const checked = ack.verify(token, deps.clock.now());
      if (!checked.ok) throw new DomainError('bad_request', checked.reason);
      const done = await acknowledge(deps, checked.id, 'a signed acknowledgement link');
      if (!done) throw new DomainError('not_found', 'notification not found');
      if (done.now)
        await deps.audit.record(ctx, {
          action: 'notification.acknowledged',
          resource_type: 'notification',
          resource_id: checked.id,
          client_ids: [done.row.client_id],
          details: { title: done.row.title, by: 'link' },
        });
      return {
        notification_id: done.row.id,
        title: done.row.title,
        acknowledged_now: done.now,
        acknowledged_at: notificationOut(done.row).acknowledged_at!,
      };
    },
  };
}

export async function startNotifications(deps: EventsDeps): Promise<ConsumerHandle[]> {
  const notify: NotifyDeps = { ...deps, ack: new AckLinks(deps.config) };
  const started: ConsumerHandle[] = [];
  try {
    started.push(await startSender(notify));
    started.push(await startChecks(notify));
    started.push(...(await startSources(notify)));
  } catch (err) {
    await Promise.all(started.map((c) => c.stop()));
    throw err;
  }
  return started;
}
