import type { EntityManager } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../../contracts/catalogue.ts';
import type { CallerContext } from '../../../../contracts/context.ts';
import type { ReceiverSource } from '../../../../contracts/domains/events-records.ts';
import type { AlertSource, WebhookEndpoint } from '../../../../contracts/domains/events.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { publishEvent } from '../../../../platform/jetstream.ts';
import { requireOnClient } from '../../../../platform/scope.ts';
import type { RequestScope } from '../../../../platform/serve.ts';
import { iso, isoOrNull, sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import { receiverUrl, type ReceiverKind } from '../tokens.ts';

/** A receiver as stored, how each kind is shown, and what every route that manages receivers shares. */

export interface Row {
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
export const COLUMNS =
  'id, kind, source, client_id, environment_id, name, token_hash, token_prefix, secret_enc, oncall_phone, created_by, last_delivery_at, created_at, updated_at';

export const KIND = {
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
export const webhookOut = (r: Row): WebhookEndpoint => ({
  ...common(r),
  source: r.source as WebhookEndpoint['source'],
});
export const alertOut = (r: Row): AlertSource => ({
  ...common(r),
  source: 'alertmanager',
  oncall_phone: r.oncall_phone,
});

/** A receiver of `kind` the caller may act on with `action` (404 out of reach or of another kind, 403 without it). */
export async function loadReceiver(
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
export async function checkEnvironment(
  deps: EventsDeps,
  scope: RequestScope<SystemCatalogue>,
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

export const announce = (deps: EventsDeps, row: Row, hashes: string[]): Promise<unknown> => {
  deps.receivers.forget(hashes);
  return publishEvent(deps.nc, 'svc.evt.events.receiver_changed', { receiver_id: row.id, token_hashes: hashes });
};

/** A receiver as shown, with its token and receiver URL when one was just issued (shown this once). */
export const issued = <T extends object>(
  deps: EventsDeps,
  out: T,
  row: Row,
  token?: string,
): T & { token?: string; url?: string } =>
  token ? { ...out, token, url: receiverUrl(deps.config.SVC_BACKEND_URL, row.source, token) } : { ...out };
