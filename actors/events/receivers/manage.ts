import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { clientsWith, requirePermission } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type { ReceiverSource } from '../../../contracts/domains/events-records.ts';
import {
  RECEIVER_IMMUTABLE,
  type AlertSource,
  type RejectedDelivery,
  type WebhookEndpoint,
} from '../../../contracts/domains/events.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { refuseChanges } from '../../../contracts/immutable.ts';
import { publishEvent } from '../../../platform/jetstream.ts';
import type { RequestScope } from '../../../platform/serve.ts';
import { requireOnClient } from '../../../platform/scope.ts';
import { iso, isoOrNull, pageOf, sql } from '../../../platform/stores/sql.ts';
import type { Cat } from '../../../contracts/catalogue.ts';
import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { newToken, receiverUrl, type ReceiverKind } from './tokens.ts';

/**
 * Webhook endpoints (`webhooks:*`) and alert sources (`alertsources:*`): one table, two resources. A receiver belongs
 * to one client, optionally one of its environments, and one source; its token is shown once (with the receiver URL)
 * and stored hashed; its shared secret, when set, is sealed (AES-256-GCM) and never shown again.
 */

interface Row {
  id: string;
  kind: ReceiverKind;
  source: ReceiverSource;
  client_id: string;
  environment_id: string | null;
  name: string;
  token_hash: string;
  token_prefix: string;
  secret_enc: string | null;
  oncall_phone: string | null;
  created_by: string | null;
  last_delivery_at: string | null;
  created_at: string;
  updated_at: string;
}
const COLUMNS =
  'id, kind, source, client_id, environment_id, name, token_hash, token_prefix, secret_enc, oncall_phone, created_by, last_delivery_at, created_at, updated_at';

const KIND = {
  webhook: { perm: 'webhooks', what: 'webhook endpoint', audit: 'webhook_endpoint' },
  alert: { perm: 'alertsources', what: 'alert source', audit: 'alert_source' },
} as const;

function common(r: Row) {
  return {
    id: r.id,
    client_id: r.client_id,
    environment_id: r.environment_id,
    name: r.name,
    has_secret: r.secret_enc !== null,
    token_prefix: r.token_prefix,
    last_delivery_at: isoOrNull(r.last_delivery_at),
    created_by: r.created_by,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}
const webhookOut = (r: Row): WebhookEndpoint => ({ ...common(r), source: r.source as WebhookEndpoint['source'] });
const alertOut = (r: Row): AlertSource => ({ ...common(r), source: 'alertmanager', oncall_phone: r.oncall_phone });

interface RejectedRow {
  id: string;
  receiver_id: string;
  source: ReceiverSource;
  event: string;
  reason: string;
  external_id: string;
  headers: Record<string, string>;
  body_excerpt: string;
  received_at: string;
}
const rejectedOut = (r: RejectedRow): RejectedDelivery => ({ ...r, received_at: iso(r.received_at) });

export function receiverHandlers(deps: EventsDeps): EventsHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  /** A receiver of `kind` the caller may act on with `action` (404 out of reach or of another kind, 403 without it). */
  async function load(
    em: EntityManager,
    ctx: CallerContext,
    kind: ReceiverKind,
    id: string,
    action: 'read' | 'write' | 'delete',
    lock = false,
  ): Promise<Row> {
    const [row] = await sql<Row>(
      em,
      `SELECT ${COLUMNS} FROM event_receivers WHERE id = ? AND kind = ?${lock ? ' FOR UPDATE' : ''}`,
      [id, kind],
    );
    if (!row) throw new DomainError('not_found', `${KIND[kind].what} not found`);
    requireOnClient(ctx, row.client_id, `${KIND[kind].perm}:${action}`, KIND[kind].what);
    return row;
  }

  /** An environment must be one of the receiver's client (404 otherwise, as for any id the caller cannot use). */
  async function checkEnvironment(
    scope: RequestScope<Cat>,
    clientId: string,
    environmentId: string | null,
  ): Promise<void> {
    if (environmentId === null) return;
    const env = await deps.fleet.environment(scope.ctx, environmentId, {
      deadline: scope.deadline,
      traceparent: scope.traceparent,
    });
    if (!env || env.client_id !== clientId) throw new DomainError('not_found', 'environment not found in this client');
  }

  const announce = (row: Row, hashes: string[]): Promise<unknown> => {
    deps.receivers.forget(hashes);
    return publishEvent(deps.nc, 'svc.evt.events.receiver_changed', { receiver_id: row.id, token_hashes: hashes });
  };

  function list(kind: ReceiverKind) {
    return async (
      q: { page: number; per_page: number; client_id?: string | undefined; source?: string | undefined },
      { ctx }: { ctx: CallerContext },
    ) => {
      const perm = `${KIND[kind].perm}:read`;
      requirePermission(ctx, perm);
      const where: string[] = ['kind = ?'];
      const params: unknown[] = [kind];
      if (q.client_id !== undefined) {
        requireOnClient(ctx, q.client_id, perm, 'client');
        where.push('client_id = ?');
        params.push(q.client_id);
      } else {
        const scope = clientsWith(ctx, perm);
        if (scope !== 'all') {
          if (scope.length === 0) return { items: [], total: 0, page: q.page, per_page: q.per_page };
          where.push('client_id IN (?)');
          params.push(scope);
        }
      }
      if (q.source !== undefined) {
        where.push('source = ?');
        params.push(q.source);
      }
      return pageOf(
        fork(),
        {
          columns: COLUMNS,
          from: `event_receivers WHERE ${where.join(' AND ')}`,
          params,
          order: 'created_at DESC, id DESC',
        },
        q,
        (rows: Row[]) => rows,
      );
    };
  }

  async function create(
    kind: ReceiverKind,
    b: {
      client_id: string;
      environment_id: string | null;
      source: ReceiverSource;
      name: string;
      secret: string | null;
      oncall_phone?: string | null;
    },
    scope: RequestScope<Cat>,
  ): Promise<{ row: Row; token: string }> {
    const { ctx } = scope;
    requireOnClient(ctx, b.client_id, `${KIND[kind].perm}:write`, 'client');
    await checkEnvironment(scope, b.client_id, b.environment_id);
    const id = randomUUID();
    const t = newToken(kind);
    const createdBy = ctx.principal.kind === 'user' ? ctx.principal.user_id : null;
    const [row] = await sql<Row>(
      fork(),
      `INSERT INTO event_receivers (id, kind, source, client_id, environment_id, name, token_hash, token_prefix, secret_enc, oncall_phone, created_by)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
      [
        id,
        kind,
        b.source,
        b.client_id,
        b.environment_id,
        b.name,
        t.hash,
        t.prefix,
        b.secret === null ? null : deps.box.seal(b.secret),
        b.oncall_phone ?? null,
        createdBy,
      ],
    );
    if (!row) throw new DomainError('not_found', 'client not found');
    // The token may have been looked up (and cached as unknown) before it existed: unlikely with 256 random bits, but free to rule out.
    deps.receivers.forget([t.hash]);
    await deps.audit.record(ctx, {
      action: `${KIND[kind].audit}.created`,
      resource_type: KIND[kind].audit,
      resource_id: id,
      client_ids: [b.client_id],
      details: {
        client_id: b.client_id,
        environment_id: b.environment_id,
        source: b.source,
        name: b.name,
        has_secret: b.secret !== null,
        ...(kind === 'alert' ? { oncall_phone: b.oncall_phone ?? null } : {}),
      },
    });
    return { row, token: t.token };
  }

  async function update(
    kind: ReceiverKind,
    b: {
      id: string;
      name: string;
      environment_id?: string | null | undefined;
      secret?: string | null | undefined;
      rotate_token: boolean;
      oncall_phone?: string | null | undefined;
      client_id?: string | undefined;
      source?: string | undefined;
    },
    scope: RequestScope<Cat>,
  ): Promise<{ row: Row; token?: string }> {
    const { ctx } = scope;
    const em = fork();
    const current = await load(em, ctx, kind, b.id, 'write');
    // Compared with what GET shows, so its answer sent back as it is passes.
    refuseChanges(b, kind === 'webhook' ? webhookOut(current) : alertOut(current), RECEIVER_IMMUTABLE);
    if (b.environment_id !== undefined) await checkEnvironment(scope, current.client_id, b.environment_id);
    const t = b.rotate_token ? newToken(kind) : undefined;
    const { before, after } = await em.transactional(async (tx) => {
      const before = await load(tx, ctx, kind, b.id, 'write', true);
      const sets = ['name = ?', 'updated_at = now()'];
      const params: unknown[] = [b.name];
      const set = (column: string, value: unknown): void => {
        sets.push(`${column} = ?`);
        params.push(value);
      };
      if (b.environment_id !== undefined) set('environment_id', b.environment_id);
      if (b.secret !== undefined) set('secret_enc', b.secret === null ? null : deps.box.seal(b.secret));
      if (kind === 'alert' && b.oncall_phone !== undefined) set('oncall_phone', b.oncall_phone);
      if (t) {
        set('token_hash', t.hash);
        set('token_prefix', t.prefix);
      }
      const [after] = await sql<Row>(
        tx,
        `UPDATE event_receivers SET ${sets.join(', ')} WHERE id = ? RETURNING ${COLUMNS}`,
        [...params, b.id],
      );
      if (!after) throw new DomainError('not_found', `${KIND[kind].what} not found`);
      return { before, after };
    });
    // The old token (and the cached secret and environment under it) stop at once on every instance.
    await announce(after, t ? [before.token_hash, t.hash] : [before.token_hash]);
    const changes: Record<string, unknown> = {};
    if (before.name !== after.name) changes.name = { from: before.name, to: after.name };
    if (before.environment_id !== after.environment_id)
      changes.environment_id = { from: before.environment_id, to: after.environment_id };
    if (b.secret !== undefined) changes.secret = b.secret === null ? 'cleared' : 'set';
    if (before.oncall_phone !== after.oncall_phone)
      changes.oncall_phone = { from: before.oncall_phone, to: after.oncall_phone };
    if (t) changes.token = 'rotated';
    await deps.audit.record(ctx, {
      action: `${KIND[kind].audit}.updated`,
      resource_type: KIND[kind].audit,
      resource_id: b.id,
      client_ids: [before.client_id],
      details: { changes },
    });
    return t ? { row: after, token: t.token } : { row: after };
  }

  async function remove(kind: ReceiverKind, id: string, ctx: CallerContext): Promise<Record<string, never>> {
    const row = await fork().transactional(async (tx) => {
      const row = await load(tx, ctx, kind, id, 'delete', true);
      await sql(tx, `DELETE FROM event_receivers WHERE id = ?`, [id]);
      return row;
    });
    await announce(row, [row.token_hash]);
    await deps.audit.record(ctx, {
      action: `${KIND[kind].audit}.deleted`,
      resource_type: KIND[kind].audit,
      resource_id: id,
      client_ids: [row.client_id],
      details: { client_id: row.client_id, source: row.source, name: row.name },
    });
    return {};
  }

  function rejected(kind: ReceiverKind) {
    return async (q: { id: string; page: number; per_page: number }, { ctx }: { ctx: CallerContext }) => {
      const em = fork();
      await load(em, ctx, kind, q.id, 'read');
      return pageOf(
        em,
        {
          columns: 'id, receiver_id, source, event, reason, external_id, headers, body_excerpt, received_at',
          from: 'rejected_deliveries WHERE receiver_id = ?',
          params: [q.id],
          order: 'received_at DESC, created_at DESC, id DESC',
        },
        q,
        (rows: RejectedRow[]) => rows.map(rejectedOut),
      );
    };
  }

  const issued = <T extends object>(out: T, row: Row, token?: string): T & { token?: string; url?: string } =>
    token ? { ...out, token, url: receiverUrl(deps.config.SVC_BACKEND_URL, row.source, token) } : { ...out };

  return {
    'svc.events.webhook_endpoints.list': async (q, s) => {
      const page = await list('webhook')(q, s);
      return { ...page, items: page.items.map(webhookOut) };
    },
    'svc.events.webhook_endpoints.get': async ({ id }, { ctx }) =>
      webhookOut(await load(fork(), ctx, 'webhook', id, 'read')),
    'svc.events.webhook_endpoints.create': async (b, scope) => {
      const { row, token } = await create('webhook', b, scope);
      return issued(webhookOut(row), row, token);
    },
    'svc.events.webhook_endpoints.update': async (b, scope) => {
      const { row, token } = await update('webhook', b, scope);
      return issued(webhookOut(row), row, token);
    },
    'svc.events.webhook_endpoints.delete': async ({ id }, { ctx }) => remove('webhook', id, ctx),
    'svc.events.webhook_endpoints.rejected': rejected('webhook'),

    'svc.events.alert_sources.list': async (q, s) => {
      const page = await list('alert')(q, s);
      return { ...page, items: page.items.map(alertOut) };
    },
    'svc.events.alert_sources.get': async ({ id }, { ctx }) => alertOut(await load(fork(), ctx, 'alert', id, 'read')),
    'svc.events.alert_sources.create': async (b, scope) => {
      const { row, token } = await create('alert', b, scope);
      return issued(alertOut(row), row, token);
    },
    'svc.events.alert_sources.update': async (b, scope) => {
      const { row, token } = await update('alert', b, scope);
      return issued(alertOut(row), row, token);
    },
    'svc.events.alert_sources.delete': async ({ id }, { ctx }) => remove('alert', id, ctx),
    'svc.events.alert_sources.rejected': rejected('alert'),
  };
}
