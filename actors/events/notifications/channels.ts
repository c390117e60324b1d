import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import { CHANNEL_IMMUTABLE, type ChannelKind } from '../../../contracts/domains/events-notifications.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import { requireOnClient } from '../../../platform/scope.ts';
import type { RequestScope } from '../../../platform/serve.ts';
import { toPgArray } from '../../../platform/stores/pg-values.ts';
import { pageOf, sql } from '../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { enqueueDeliveries } from './deliveries.ts';
import { testMessage } from './messages.ts';
import {
  CHANNEL_COLUMNS,
  channelOut,
  clientFilter,
  DELIVERY_COLUMNS,
  deliveriesOut,
  emptyPage,
  loadOwned,
  READ,
  WRITE,
  shownUrl,
  type ChannelRow,
  type DeliveryRow,
} from './rows.ts';
import { voiceConfig } from '../voice/twilio.ts';
import { checkTargetUrl } from './url-guard.ts';
import { newWebhookSecret } from './webhook-signing.ts';

const WHAT = 'notification channel';

/** A channel's target must fit its kind: addresses for e-mail, a URL the delivery rules allow for chat and webhook. */
async function checkTarget(
  deps: EventsDeps,
  kind: ChannelKind,
  target: { addresses: string[]; url: string | null; phone: string | null },
): Promise<void> {
  const what = kind === 'email' ? 'an e-mail' : `a ${kind}`;
  if ((kind === 'email') !== target.addresses.length > 0)
    throw new DomainError(
      'bad_request',
      kind === 'email'
        ? 'addresses: an e-mail channel needs at least one address'
        : `addresses: ${what} channel has none`,
    );
  if ((kind === 'voice') !== (target.phone !== null))
    throw new DomainError(
      'bad_request',
      kind === 'voice' ? 'phone: a voice channel needs a phone number' : `phone: ${what} channel has no phone number`,
    );
  if (kind === 'voice' && !voiceConfig(deps.config))
    throw new DomainError(
      'bad_request',
      'kind: no voice provider is configured (SVC_TWILIO_ACCOUNT_SID, SVC_TWILIO_AUTH_TOKEN, SVC_TWILIO_FROM)',
    );
  const hasUrl = kind === 'chat' || kind === 'webhook';
  if (!hasUrl) {
    if (target.url !== null) throw new DomainError('bad_request', `url: ${what} channel has no URL`);
    return;
  }
  if (target.url === null) throw new DomainError('bad_request', `url: ${what} channel needs a URL`);
  const check = await checkTargetUrl(target.url, {
    allowHttp: deps.config.SVC_NOTIFY_ALLOW_HTTP,
    allowPrivate: deps.config.SVC_NOTIFY_ALLOW_PRIVATE,
  });
  if (!check.ok) throw new DomainError('bad_request', `url: ${check.reason}`);
}

/** The channel, row-locked for the rest of the transaction, when the caller may change it. */
const lockForWrite = (tx: EntityManager, scope: RequestScope<SystemCatalogue>, id: string) =>
  loadOwned<ChannelRow>(tx, scope.ctx, 'notification_channels', CHANNEL_COLUMNS, id, WRITE, WHAT, true);

const load = (deps: EventsDeps, scope: RequestScope<SystemCatalogue>, id: string, perm: string, lock = false) =>
  loadOwned<ChannelRow>(deps.orm.em.fork(), scope.ctx, 'notification_channels', CHANNEL_COLUMNS, id, perm, WHAT, lock);

/** Reading channels and their delivery logs. */
function channelReads(deps: EventsDeps, now: () => number): EventsHandlers {
  return {
    'svc.events.notification_channels.list': async (q, { ctx }) => {
      const params: unknown[] = [];
      const where = clientFilter(ctx, q.client_id, params);
      if (where === null) return emptyPage(q);
      const parts = [where];
      if (q.kind !== undefined) {
        parts.push('kind = ?');
        params.push(q.kind);
      }
      return pageOf(
        deps.orm.em.fork(),
        {
          columns: CHANNEL_COLUMNS,
          from: `notification_channels WHERE ${parts.join(' AND ')}`,
          params,
          order: 'created_at DESC, id DESC',
        },
        q,
        (rows: ChannelRow[]) => rows.map((r) => channelOut(r, now())),
      );
    },

    'svc.events.notification_channels.get': async ({ id }, scope) =>
      channelOut(await load(deps, scope, id, READ), now()),

    'svc.events.notification_channels.deliveries': async (q, scope) => {
      const channel = await load(deps, scope, q.id, READ);
      const params: unknown[] = [channel.id];
      let where = 'channel_id = ?';
      if (q.status !== undefined) {
        where += ' AND status = ?';
        params.push(q.status);
      }
      const em = deps.orm.em.fork();
      return pageOf(
        em,
        {
          columns: DELIVERY_COLUMNS,
          from: `notification_deliveries WHERE ${where}`,
          params,
          order: 'created_at DESC, id DESC',
        },
        q,
        (rows: DeliveryRow[]) => deliveriesOut(em, rows),
      );
    },
  };
}

/** Creating, changing and removing channels, with an audit entry each. */
function channelWrites(deps: EventsDeps, now: () => number): EventsHandlers {
  return {
    'svc.events.notification_channels.create': async (b, scope) => {
      const { ctx } = scope;
      requireOnClient(ctx, b.client_id, WRITE, 'client');
      await checkTarget(deps, b.kind, b);
      const id = randomUUID();
      const secret = b.kind === 'webhook' ? newWebhookSecret() : undefined;
      const [row] = await sql<ChannelRow>(
        deps.orm.em.fork(),
        `INSERT INTO notification_channels (id, client_id, kind, name, addresses, url, phone, enabled, secret_enc, created_by)
         SELECT ?, id, ?, ?, ?::text[], ?, ?, ?, ?, ? FROM clients WHERE id = ? RETURNING ${CHANNEL_COLUMNS}`,
        [
          id,
          b.kind,
          b.name,
          toPgArray(b.addresses),
          b.url,
          b.phone,
          b.enabled,
          secret ? deps.box.seal(secret) : null,
          ctx.principal.kind === 'user' ? ctx.principal.user_id : null,
          b.client_id,
        ],
      );
      if (!row) throw new DomainError('not_found', 'client not found');
      await deps.audit.record(ctx, {
        action: 'notification_channel.created',
        resource_type: 'notification_channel',
        resource_id: id,
        client_ids: [b.client_id],
        details: { client_id: b.client_id, kind: b.kind, name: b.name, enabled: b.enabled },
      });
      return { ...channelOut(row, now()), ...(secret ? { secret } : {}) };
    },

    'svc.events.notification_channels.update': async (b, scope) => {
      const current = await load(deps, scope, b.id, WRITE);
      refuseChanges(b, channelOut(current, now()), CHANNEL_IMMUTABLE);
      // The URL as GET shows it (a chat URL masked) sent back unchanged keeps the stored one.
      const sameUrl = b.url === undefined || b.url === shownUrl(current.kind, current.url);
      const target = {
        addresses: b.addresses ?? current.addresses,
        url: sameUrl ? current.url : (b.url ?? null),
        phone: b.phone !== undefined ? b.phone : current.phone,
      };
      const retargeted = b.addresses !== undefined || !sameUrl || b.phone !== undefined;
      if (retargeted) await checkTarget(deps, current.kind, target);
      const after = await deps.orm.em.fork().transactional(async (tx) => {
        // Locked first: a rule being written on this channel (it holds the row FOR SHARE) is seen once it commits.
        await sql(tx, `SELECT id FROM notification_channels WHERE id = ? FOR UPDATE`, [b.id]);
        if (retargeted && scope.ctx.access?.super_admin !== true) {
          const [global] = await sql<{ id: string }>(
            tx,
            `SELECT r.id FROM notification_rules r
              WHERE r.audit_global AND EXISTS (SELECT 1 FROM jsonb_array_elements(r.steps) s WHERE jsonb_exists(s->'channel_ids', ?))
              LIMIT 1`,
            [b.id],
          );
          // Those messages tell of global audit entries, which only super admins read: only they send them elsewhere.
          if (global)
            throw new DomainError(
              'forbidden',
              'a rule of global audit entries sends to this channel: only a super admin may change where it sends',
            );
        }
        const [row] = await sql<ChannelRow>(
          tx,
          `UPDATE notification_channels SET name = ?, addresses = ?::text[], url = ?, phone = ?, enabled = ?, updated_at = now()
            WHERE id = ? RETURNING ${CHANNEL_COLUMNS}`,
          [b.name, toPgArray(target.addresses), target.url, target.phone, b.enabled ?? current.enabled, b.id],
        );
        return row;
      });
      if (!after) throw new DomainError('not_found', `${WHAT} not found`);
      const changes: Record<string, unknown> = {};
      for (const k of ['name', 'enabled', 'phone'] as const)
        if (current[k] !== after[k]) changes[k] = { from: current[k], to: after[k] };
      if (current.url !== after.url)
        changes.url =
          current.kind === 'chat' ? 'changed' : { from: shownUrl(current.kind, current.url), to: after.url };
      if (current.addresses.join(',') !== after.addresses.join(','))
        changes.addresses = { from: current.addresses, to: after.addresses };
      await deps.audit.record(scope.ctx, {
        action: 'notification_channel.updated',
        resource_type: 'notification_channel',
        resource_id: b.id,
        client_ids: [current.client_id],
        details: { changes },
      });
      return channelOut(after, now());
    },

    'svc.events.notification_channels.delete': async ({ id }, scope) => {
      const row = await deps.orm.em.fork().transactional(async (tx) => {
        const row = await lockForWrite(tx, scope, id);
        await sql(tx, `DELETE FROM notification_channels WHERE id = ?`, [id]);
        return row;
      });
      await deps.audit.record(scope.ctx, {
        action: 'notification_channel.deleted',
        resource_type: 'notification_channel',
        resource_id: id,
        client_ids: [row.client_id],
        details: { client_id: row.client_id, kind: row.kind, name: row.name },
      });
      return {};
    },
  };
}

/** A new signing secret, and a test message through the delivery path. */
function channelActions(deps: EventsDeps, now: () => number): EventsHandlers {
  return {
    'svc.events.notification_channels.rotate_secret': async ({ id, overlap_hours }, scope) => {
      const secret = newWebhookSecret();
      const after = await deps.orm.em.fork().transactional(async (tx) => {
        const row = await lockForWrite(tx, scope, id);
        if (row.kind !== 'webhook') throw new DomainError('bad_request', 'only a webhook channel has a signing secret');
        const until = overlap_hours > 0 ? new Date(now() + overlap_hours * 3_600_000) : null;
        const [after] = await sql<ChannelRow>(
          tx,
          `UPDATE notification_channels SET secret_enc = ?, previous_secret_enc = ?, previous_secret_expires_at = ?, updated_at = now()
            WHERE id = ? RETURNING ${CHANNEL_COLUMNS}`,
          [deps.box.seal(secret), until ? row.secret_enc : null, until, id],
        );
        return after!;
      });
      await deps.audit.record(scope.ctx, {
        action: 'notification_channel.secret_rotated',
        resource_type: 'notification_channel',
        resource_id: id,
        client_ids: [after.client_id],
        details: { overlap_hours },
      });
      return { ...channelOut(after, now()), secret };
    },

    'svc.events.notification_channels.test': async ({ id }, scope) => {
      const channel = await load(deps, scope, id, WRITE);
      const em = deps.orm.em.fork();
      const [delivery] = await enqueueDeliveries(deps, em, [
        {
          channel_id: channel.id,
          client_id: channel.client_id,
          notification_id: null,
          kind: 'test',
          step: 0,
          dedupe_key: `test:${randomUUID()}`,
          suppressed: null,
          payload: testMessage(channel, new Date(now())),
          evenDisabled: true,
        },
      ]);
      await deps.audit.record(scope.ctx, {
        action: 'notification_channel.tested',
        resource_type: 'notification_channel',
        resource_id: id,
        client_ids: [channel.client_id],
        details: { delivery_id: delivery!.id },
      });
      return (await deliveriesOut(em, [delivery!]))[0]!;
    },
  };
}

/**
 * Channels (`notifications:*`): where notifications go. A webhook channel signs every delivery per Standard Webhooks
 * with a `whsec_` secret, shown at creation and at each rotation, sealed at rest; during a rotation's overlap the
 * previous secret signs beside the new one.
 */
export function channelHandlers(deps: EventsDeps): EventsHandlers {
  const now = (): number => deps.clock.now();
  return { ...channelReads(deps, now), ...channelWrites(deps, now), ...channelActions(deps, now) };
}
