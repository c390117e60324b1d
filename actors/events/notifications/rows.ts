import type { EntityManager } from '@mikro-orm/postgresql';
import { clientsWith, hasPermission, requirePermission } from '../../../contracts/access.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type {
  ChannelKind,
  EscalationStep,
  LabelMatcher,
  MaintenanceWindow,
  Notification,
  NotificationChannel,
  NotificationDelivery,
  NotificationRule,
  RuleEvent,
} from '../../../contracts/domains/events-notifications.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { requireOnClient } from '../../../platform/scope.ts';
import { iso, isoOrNull, sql } from '../../../platform/stores/sql.ts';
import { activeWindowAt, occurrencesBetween } from './maintenance-windows.ts';

/** The stored rows of notifications, how each is shown, and the access checks every operation shares. */

export const READ = 'notifications:read';
export const WRITE = 'notifications:write';

export interface ChannelRow {
  id: string;
  client_id: string;
  kind: ChannelKind;
  name: string;
  addresses: string[];
  url: string | null;
  phone: string | null;
  enabled: boolean;
  secret_enc: string | null;
  previous_secret_enc: string | null;
  previous_secret_expires_at: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}
export const CHANNEL_COLUMNS =
  'id, client_id, kind, name, addresses, url, phone, enabled, secret_enc, previous_secret_enc, previous_secret_expires_at, created_by, created_at, updated_at';

/**
 * A chat incoming-webhook URL is its own credential (whoever has it can post to the channel): shown as its origin and
 * last four characters. A webhook channel's URL is not (its deliveries are signed) and is shown whole.
 */
export function shownUrl(kind: ChannelKind, url: string | null): string | null {
  if (url === null || kind !== 'chat') return url;
  let origin = '';
  try {
    origin = new URL(url).origin;
  } catch {
    return '…';
  }
  return `${origin}/…${url.slice(-4)}`;
}

export const channelOut = (r: ChannelRow, now: number): NotificationChannel => ({
  id: r.id,
  client_id: r.client_id,
  kind: r.kind,
  name: r.name,
  addresses: r.addresses,
  url: shownUrl(r.kind, r.url),
  phone: r.phone,
  enabled: r.enabled,
  has_secret: r.secret_enc !== null,
  previous_secret_expires_at:
    r.previous_secret_expires_at !== null && Date.parse(iso(r.previous_secret_expires_at)) > now
      ? iso(r.previous_secret_expires_at)
      : null,
  created_by: r.created_by,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

export interface RuleRow {
  id: string;
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  name: string;
  event: RuleEvent;
  severity: 'info' | 'warning' | 'critical';
  offline_minutes: number | null;
  matchers: LabelMatcher[];
  sla_warn_minutes: number | null;
  audit_actions: string[];
  audit_global: boolean;
  group_window_minutes: number;
  steps: EscalationStep[];
  enabled: boolean;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}
export const RULE_COLUMNS =
  'id, client_id, environment_id, host_id, name, event, severity, offline_minutes, matchers, sla_warn_minutes, audit_actions, audit_global, group_window_minutes, steps, enabled, created_by, created_at, updated_at';

export const ruleOut = (r: RuleRow): NotificationRule => ({
  id: r.id,
  client_id: r.client_id,
  environment_id: r.environment_id,
  host_id: r.host_id,
  name: r.name,
  event: r.event,
  severity: r.severity,
  offline_minutes: r.offline_minutes,
  matchers: r.matchers,
  sla_warn_minutes: r.sla_warn_minutes,
  audit_actions: r.audit_actions,
  audit_global: r.audit_global,
  group_window_minutes: r.group_window_minutes,
  steps: r.steps,
  enabled: r.enabled,
  created_by: r.created_by,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

export interface WindowRow {
  id: string;
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  name: string;
  starts_at: string;
  timezone: string;
  duration_minutes: number;
  rrule: string | null;
  created_by: string | null;
  created_at: string;
  updated_at: string;
}
export const WINDOW_COLUMNS =
  'id, client_id, environment_id, host_id, name, starts_at, timezone, duration_minutes, rrule, created_by, created_at, updated_at';

const YEAR = 366 * 86_400_000;

export function windowOut(r: WindowRow, now: number): MaintenanceWindow {
  const active = activeWindowAt(r, new Date(now));
  const next = active ?? occurrencesBetween(r, new Date(now), new Date(now + 5 * YEAR), 1)[0] ?? null;
  return {
    id: r.id,
    client_id: r.client_id,
    environment_id: r.environment_id,
    host_id: r.host_id,
    name: r.name,
    starts_at: r.starts_at,
    timezone: r.timezone,
    duration_minutes: r.duration_minutes,
    rrule: r.rrule,
    next: next ? { start: next.start.toISOString(), end: next.end.toISOString() } : null,
    active: active !== null,
    created_by: r.created_by,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

export interface NotificationRow {
  id: string;
  client_id: string;
  rule_id: string | null;
  environment_id: string | null;
  host_id: string | null;
  place_environment_id: string | null;
  place_host_id: string | null;
  event: RuleEvent;
  severity: 'info' | 'warning' | 'critical';
  group_key: string;
  title: string;
  status: 'firing' | 'resolved';
  count: number;
  step: number;
  suppressed: boolean;
  last_event_key: string | null;
  first_at: string;
  last_at: string;
  last_sent_at: string | null;
  resolved_at: string | null;
  acknowledged_at: string | null;
  acknowledged_by: string | null;
}
export const NOTIFICATION_COLUMNS =
  'id, client_id, rule_id, environment_id, host_id, place_environment_id, place_host_id, event, severity, group_key, title, status, count, step, suppressed, last_event_key, first_at, last_at, last_sent_at, resolved_at, acknowledged_at, acknowledged_by';

export const notificationOut = (r: NotificationRow): Notification => ({
  id: r.id,
  client_id: r.client_id,
  rule_id: r.rule_id,
  environment_id: r.environment_id,
  host_id: r.host_id,
  event: r.event,
  severity: r.severity,
  title: r.title,
  status: r.status,
  count: r.count,
  step: r.step,
  suppressed: r.suppressed,
  first_at: iso(r.first_at),
  last_at: iso(r.last_at),
  resolved_at: isoOrNull(r.resolved_at),
  acknowledged_at: isoOrNull(r.acknowledged_at),
  acknowledged_by: r.acknowledged_by,
});

export interface DeliveryRow {
  id: string;
  client_id: string;
  channel_id: string;
  notification_id: string | null;
  kind: NotificationDelivery['kind'];
  step: number;
  status: NotificationDelivery['status'];
  reason: string | null;
  payload: MessagePayload;
  redelivered_at: string | null;
  /** The send job it waits for (null: made before jobs were named; any job sends it). */
  job_id: string | null;
  created_at: string;
  delivered_at: string | null;
}
export const DELIVERY_COLUMNS =
  'id, client_id, channel_id, notification_id, kind, step, status, reason, payload, redelivered_at, job_id, created_at, delivered_at';

/** What a delivery says, fixed when it is made: every attempt (and a redelivery) sends the same message. */
export interface MessagePayload {
  type: string;
  title: string;
  text: string;
  severity: string;
  status: 'firing' | 'resolved' | 'test';
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  notification_id: string | null;
  rule_id: string | null;
  count: number;
  step: number;
  at: string;
  acknowledge_url: string | null;
}

export interface AttemptRow {
  delivery_id: string;
  at: string;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
}

/** Deliveries as shown, each with its last 50 attempts. */
export async function deliveriesOut(em: EntityManager, rows: DeliveryRow[]): Promise<NotificationDelivery[]> {
  const ids = rows.map((r) => r.id);
  const attempts =
    ids.length === 0
      ? []
      : await sql<AttemptRow>(
          em,
          `SELECT delivery_id, at, status_code, latency_ms, error FROM (
             SELECT *, row_number() OVER (PARTITION BY delivery_id ORDER BY at DESC) AS n
               FROM notification_attempts WHERE delivery_id IN (?)) a
            WHERE n <= 50 ORDER BY at`,
          [ids],
        );
  const by = new Map<string, AttemptRow[]>();
  for (const a of attempts) by.set(a.delivery_id, [...(by.get(a.delivery_id) ?? []), a]);
  return rows.map((r) => ({
    id: r.id,
    channel_id: r.channel_id,
    notification_id: r.notification_id,
    kind: r.kind,
    step: r.step,
    status: r.status,
    reason: r.reason,
    created_at: iso(r.created_at),
    delivered_at: isoOrNull(r.delivered_at),
    attempts: (by.get(r.id) ?? []).map((a) => ({
      at: iso(a.at),
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      error: a.error,
    })),
  }));
}

/**
 * One row of `table` the caller may act on: 404 when it does not exist or its client is out of reach, 403 in reach
 * without `permission` on the client.
 */
export async function loadOwned<R extends { client_id: string }>(
  em: EntityManager,
  ctx: CallerContext,
  table: string,
  columns: string,
  id: string,
  permission: string,
  what: string,
  lock = false,
): Promise<R> {
  const [row] = await sql<R>(em, `SELECT ${columns} FROM ${table} WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [id]);
  if (!row) throw new DomainError('not_found', `${what} not found`);
  requireOnClient(ctx, row.client_id, permission, what);
  return row;
}

/**
 * `client_id = ?` or `client_id IN (…)` for a list: the asked client (404/403 as for its rows), else every client the
 * caller reads notifications of; null when that is none.
 */
export function clientFilter(ctx: CallerContext, clientId: string | undefined, params: unknown[]): string | null {
  if (clientId !== undefined) {
    requireOnClient(ctx, clientId, READ, 'client');
    params.push(clientId);
    return 'client_id = ?';
  }
  requirePermission(ctx, READ);
  const scope = clientsWith(ctx, READ);
  if (scope === 'all') return 'true';
  if (scope.length === 0) return null;
  params.push(scope);
  return 'client_id IN (?)';
}

export const emptyPage = (q: { page: number; per_page: number }) => ({
  items: [],
  total: 0,
  page: q.page,
  per_page: q.per_page,
});

/**
 * What a notification tells of is read with its source's own permission too, not only notifications:read: an SLA's
 * request with servicedesk:read, an invoice with invoices:read, an audit entry with audit:read on the client; a global
 * audit entry (no client) only by a super admin.
 */
const SOURCE_PERMISSION: Partial<Record<NotificationRow['event'], string>> = {
  sla_breach: 'servicedesk:read',
  invoice_review: 'invoices:read',
  audit: 'audit:read',
};
const GLOBAL_AUDIT = 'audit-global:';

/** Whether a notification's event has a source permission of its own (its rows stay off the timeline). */
export const hasSourcePermission = (event: NotificationRow['event']): boolean => SOURCE_PERMISSION[event] !== undefined;

export function canReadSource(
  ctx: CallerContext,
  n: Pick<NotificationRow, 'event' | 'client_id' | 'group_key'>,
): boolean {
  const perm = SOURCE_PERMISSION[n.event];
  if (perm === undefined) return true;
  if (n.group_key.startsWith(GLOBAL_AUDIT) && ctx.access?.super_admin !== true) return false;
  return hasPermission(ctx, perm, n.client_id);
}

/** canReadSource as SQL over `notifications` (its parameters pushed onto `params`). */
export function sourceFilter(ctx: CallerContext, params: unknown[]): string {
  const parts: string[] = [];
  for (const [event, perm] of Object.entries(SOURCE_PERMISSION)) {
    const scope = clientsWith(ctx, perm);
    if (scope === 'all') continue;
    if (scope.length === 0) {
      parts.push('event <> ?');
      params.push(event);
    } else {
      parts.push('(event <> ? OR client_id IN (?))');
      params.push(event, scope);
    }
  }
  if (ctx.access?.super_admin !== true) {
    parts.push(`group_key NOT LIKE '${GLOBAL_AUDIT}%'`);
  }
  return parts.length === 0 ? 'true' : parts.join(' AND ');
}
