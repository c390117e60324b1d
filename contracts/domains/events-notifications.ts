import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { Paged, Paging } from '../paging.ts';
import { subjects } from '../subject.ts';

/**
 * Notifications (docs/api/notifications.md): channels per client (e-mail, chat, a Standard Webhooks endpoint), rules
 * that say which events notify which channels in escalation steps, maintenance windows that hold notifications back,
 * the notifications themselves (one per rule and cause while it lasts) and every delivery with its attempts.
 * Permissions `notifications:read` and `notifications:write` on the client.
 */

const Timestamp = z.iso.datetime();
const Name = z.string().trim().min(1, 'must not be empty').max(200);
const ById = z.object({ id: z.uuid() });
const NoContent = z.object({});

// ---------------------------------------------------------------------------------------------------------------
// Channels

export const ChannelKind = z.enum(['email', 'chat', 'webhook', 'voice']);
export type ChannelKind = z.infer<typeof ChannelKind>;
const Address = z.email('must be an e-mail address').max(320);
const TargetUrl = z.url('must be a URL').max(2000);
/** E.164: `+`, country code and number. */
const Phone = z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +15551234567');

export const NotificationChannel = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  kind: ChannelKind,
  name: z.string(),
  /** E-mail: the recipients. Empty for the other kinds. */
  addresses: z.array(z.string()),
  /**
   * Chat (incoming webhook) and webhook: where deliveries are POSTed. Null for e-mail. A chat URL is its own credential
   * and is shown as its origin and last four characters; sent back so in a PUT it stays as it is.
   */
  url: z.string().nullable(),
  /** Voice: the number called through the voice provider (digit 1 on the call acknowledges). Null for the others. */
  phone: z.string().nullable(),
  enabled: z.boolean(),
  /** Webhook: a signing secret is set (shown once, at creation and rotation). */
  has_secret: z.boolean(),
  /** Webhook, during a rotation: until when the previous secret still signs too. */
  previous_secret_expires_at: Timestamp.nullable(),
  created_by: z.uuid().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type NotificationChannel = z.infer<typeof NotificationChannel>;
/** Creation and rotation of a webhook channel answer its `whsec_` secret, this once. */
export const IssuedNotificationChannel = NotificationChannel.extend({ secret: z.string().optional() });

export const CreateChannelBody = z.object({
  client_id: z.uuid(),
  kind: ChannelKind,
  name: Name,
  addresses: z.array(Address).max(20).default([]),
  url: TargetUrl.nullable().default(null),
  phone: Phone.nullable().default(null),
  enabled: z.boolean().default(true),
});
export const CHANNEL_IMMUTABLE = ['client_id', 'kind'] as const;
/** PUT: name, addresses, url, phone and enabled replaced when present; the client and kind never change. */
export const UpdateChannelBody = z.object({
  name: Name,
  addresses: z.array(Address).max(20).optional(),
  url: TargetUrl.nullable().optional(),
  phone: Phone.nullable().optional(),
  enabled: z.boolean().optional(),
  ...immutableFields(NotificationChannel, CHANNEL_IMMUTABLE),
});
export const RotateSecretBody = z.object({
  /** How long the previous secret keeps signing beside the new one (0: it stops at once). */
  overlap_hours: z.number().min(0).max(168).default(24),
});
export const ChannelListQuery = z.object({ ...Paging, client_id: z.uuid().optional(), kind: ChannelKind.optional() });

// ---------------------------------------------------------------------------------------------------------------
// Deliveries

export const DeliveryKind = z.enum(['firing', 'repeat', 'escalation', 'resolved', 'test']);
export const DeliveryStatus = z.enum(['pending', 'delivered', 'failed', 'suppressed']);
export const DeliveryAttempt = z.object({
  at: Timestamp,
  /** The HTTP status the target answered; null when none came (a timeout, a refused connection). */
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int().nonnegative(),
  error: z.string().nullable(),
});
export const NotificationDelivery = z.object({
  /** Also the `webhook-id` of a webhook delivery: the same on every attempt and redelivery. */
  id: z.uuid(),
  channel_id: z.uuid(),
  notification_id: z.uuid().nullable(),
  kind: DeliveryKind,
  step: z.number().int().nonnegative(),
  status: DeliveryStatus,
  /** Why the delivery failed or was suppressed. */
  reason: z.string().nullable(),
  created_at: Timestamp,
  delivered_at: Timestamp.nullable(),
  /** Every attempt, oldest first (the last 50). */
  attempts: z.array(DeliveryAttempt),
});
export type NotificationDelivery = z.infer<typeof NotificationDelivery>;
export const DeliveryListQuery = z.object({ ...Paging, status: DeliveryStatus.optional() });

// ---------------------------------------------------------------------------------------------------------------
// Rules

export const RuleEvent = z.enum(['agent_offline', 'alert', 'deploy_failed', 'sla_breach', 'invoice_review', 'audit']);
export type RuleEvent = z.infer<typeof RuleEvent>;
export const Severity = z.enum(['info', 'warning', 'critical']);
const LabelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'must be a label name');
export const LabelMatcher = z.object({
  label: LabelName,
  /** As in Alertmanager: equal, not equal, matches, does not match (a regular expression, anchored). */
  op: z.enum(['=', '!=', '=~', '!~']),
  value: z.string().max(500),
});
export type LabelMatcher = z.infer<typeof LabelMatcher>;
/** An audit action as entries name it (`service_account.created`), or a derived one (`user.super_admin_granted`). */
const AuditAction = z
  .string()
  .max(100)
  .regex(/^[a-z][a-z_]*(\.[a-z][a-z_]*)+$/, 'must be an audit action such as service_account.created');
export const EscalationStep = z.object({
  /** Minutes without an acknowledgement after the previous step before this one fires (0 for the first). */
  after_minutes: z.number().min(0).max(1440),
  channel_ids: z.array(z.uuid()).min(1).max(10),
});
export type EscalationStep = z.infer<typeof EscalationStep>;

export const NotificationRule = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  host_id: z.uuid().nullable(),
  name: z.string(),
  event: RuleEvent,
  severity: Severity,
  /** agent_offline: minutes an agent stays offline before it notifies. */
  offline_minutes: z.number().nullable(),
  /** alert: every matcher must hold on the alert group's labels. */
  matchers: z.array(LabelMatcher),
  /** sla_breach: also tell this many minutes before a running SLA cycle breaches (null: at the breach only). */
  sla_warn_minutes: z.number().nullable(),
  /** audit: the audit actions that notify (docs/api/notifications.md lists them, with the derived ones). */
  audit_actions: z.array(z.string()),
  /** audit: also the global entries (no client: users, roles, super admins); only a super admin sets it. */
  audit_global: z.boolean(),
  /** Repeats of an open notification within this many minutes are counted, not sent. */
  group_window_minutes: z.number(),
  steps: z.array(EscalationStep),
  enabled: z.boolean(),
  created_by: z.uuid().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type NotificationRule = z.infer<typeof NotificationRule>;

const RuleFields = {
  environment_id: z.uuid().nullable().default(null),
  host_id: z.uuid().nullable().default(null),
  name: Name,
  event: RuleEvent,
  severity: Severity.default('warning'),
  offline_minutes: z.number().min(0).max(10_080).nullable().default(null),
  matchers: z.array(LabelMatcher).max(20).default([]),
  sla_warn_minutes: z.number().positive().max(10_080).nullable().default(null),
  audit_actions: z.array(AuditAction).max(50).default([]),
  audit_global: z.boolean().default(false),
  group_window_minutes: z.number().min(0).max(10_080).default(60),
  steps: z.array(EscalationStep).min(1).max(5),
  enabled: z.boolean().default(true),
};
export const CreateRuleBody = z.object({ client_id: z.uuid(), ...RuleFields });
export const RULE_IMMUTABLE = ['client_id'] as const;
/** PUT replaces the rule (every field but the client, which never changes). */
export const UpdateRuleBody = z.object({ ...RuleFields, ...immutableFields(NotificationRule, RULE_IMMUTABLE) });
export const RuleListQuery = z.object({ ...Paging, client_id: z.uuid().optional(), event: RuleEvent.optional() });

// ---------------------------------------------------------------------------------------------------------------
// Maintenance windows

const LocalStart = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/, 'must be a local date and time YYYY-MM-DDTHH:mm (no offset)');
export const Occurrence = z.object({ start: Timestamp, end: Timestamp });
export const MaintenanceWindow = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  host_id: z.uuid().nullable(),
  name: z.string(),
  /** The (first) start, wall-clock time in `timezone`. */
  starts_at: z.string(),
  timezone: z.string(),
  duration_minutes: z.number().int(),
  /** RFC 5545 RRULE (without DTSTART); null for a one-off window. */
  rrule: z.string().nullable(),
  /** The occurrence in force now, or the next one; null when none is left. */
  next: Occurrence.nullable(),
  active: z.boolean(),
  created_by: z.uuid().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type MaintenanceWindow = z.infer<typeof MaintenanceWindow>;
const WindowFields = {
  environment_id: z.uuid().nullable().default(null),
  host_id: z.uuid().nullable().default(null),
  name: Name,
  starts_at: LocalStart,
  timezone: z.string().min(1).max(64).default('UTC'),
  duration_minutes: z
    .number()
    .int()
    .min(1)
    .max(7 * 1440),
  rrule: z.string().trim().min(1).max(500).nullable().default(null),
};
export const CreateWindowBody = z.object({ client_id: z.uuid(), ...WindowFields });
export const WINDOW_IMMUTABLE = ['client_id'] as const;
export const UpdateWindowBody = z.object({ ...WindowFields, ...immutableFields(MaintenanceWindow, WINDOW_IMMUTABLE) });
export const WindowListQuery = z.object({ ...Paging, client_id: z.uuid().optional() });
export const OccurrencesQuery = z.object({ from: z.iso.datetime(), to: z.iso.datetime() });

// ---------------------------------------------------------------------------------------------------------------
// Notifications

export const NotificationStatus = z.enum(['firing', 'resolved']);
export const Notification = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  rule_id: z.uuid().nullable(),
  environment_id: z.uuid().nullable(),
  host_id: z.uuid().nullable(),
  event: RuleEvent,
  severity: Severity,
  title: z.string(),
  status: NotificationStatus,
  /**
   * How many causes it stood for while open: each offline agent of the rule, a member counted again when it recurred
   * after recovering.
   */
  count: z.number().int().min(1),
  /** The escalation step reached (0: the first). */
  step: z.number().int().nonnegative(),
  /** Held back by a maintenance window: recorded, not sent. */
  suppressed: z.boolean(),
  first_at: Timestamp,
  last_at: Timestamp,
  resolved_at: Timestamp.nullable(),
  acknowledged_at: Timestamp.nullable(),
  acknowledged_by: z.string().nullable(),
});
export type Notification = z.infer<typeof Notification>;
export const NotificationListQuery = z.object({
  ...Paging,
  client_id: z.uuid().optional(),
  status: NotificationStatus.optional(),
  host_id: z.uuid().optional(),
});
export const AckLinkBody = z.object({ token: z.string().min(1).max(500) });
export const AckLinkReply = z.object({
  notification_id: z.uuid(),
  title: z.string(),
  /** False when it had been acknowledged before (the first acknowledgement stands). */
  acknowledged_now: z.boolean(),
  acknowledged_at: Timestamp,
});

// ---------------------------------------------------------------------------------------------------------------
// Durable work

const Time = z.iso.datetime({ offset: true });
/** Send one delivery (its row says what and where). */
export const NotifyJob = z.object({
  delivery_id: z.uuid(),
  /** Which of the delivery's jobs this is: one its redelivery replaced stops. Absent on older jobs. */
  job_id: z.uuid().optional(),
});
/** Look again later: an agent still offline after its rule's minutes, the next escalation step, a window's end. */
export const NotifyCheckJob = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('offline'),
    rule_id: z.uuid(),
    host_id: z.uuid(),
    /** When the agent went offline (the event's time). */
    since: Time,
    not_before: Time,
  }),
  z.object({ kind: z.literal('escalate'), notification_id: z.uuid(), step: z.number().int().min(1), not_before: Time }),
  z.object({ kind: z.literal('window_end'), notification_id: z.uuid(), not_before: Time }),
  /** A running SLA cycle close to its breach: tells the rule if the cycle still breaches then. */
  z.object({
    kind: z.literal('sla_warn'),
    rule_id: z.uuid(),
    issue_key: z.string().min(1).max(64),
    metric: z.enum(['first_response', 'resolution']),
    breach_at: Time,
    not_before: Time,
  }),
  /** A one-off notification (an audit action) whose grouping window is over: it closes without a message. */
  z.object({ kind: z.literal('close'), notification_id: z.uuid(), not_before: Time }),
]);
export type NotifyCheckJob = z.infer<typeof NotifyCheckJob>;

// ---------------------------------------------------------------------------------------------------------------
// Subjects

const write = ['forbidden', 'not_found', 'bad_request'] as const;
const read = ['forbidden', 'not_found'] as const;

export const notificationSubjects = subjects({
  'svc.events.notification_channels.list': {
    retry: 'safe',
    summary: 'Notification channels of the clients the caller holds notifications:read on.',
    request: ChannelListQuery,
    reply: Paged(NotificationChannel),
    errors: read,
  },
  'svc.events.notification_channels.get': {
    retry: 'safe',
    summary: 'One notification channel (notifications:read).',
    request: ById,
    reply: NotificationChannel,
    errors: read,
  },
  'svc.events.notification_channels.create': {
    summary:
      'Creates a channel of a client (notifications:write); a webhook channel answers its signing secret this once.',
    request: CreateChannelBody,
    reply: IssuedNotificationChannel,
    errors: write,
  },
  'svc.events.notification_channels.update': {
    summary: 'Renames, retargets, enables or disables a channel (notifications:write).',
    request: UpdateChannelBody.extend(ById.shape),
    reply: NotificationChannel,
    errors: write,
  },
  'svc.events.notification_channels.delete': {
    summary: 'Removes a channel: rules stop sending to it, its deliveries go with it (notifications:write).',
    request: ById,
    reply: NoContent,
    errors: read,
  },
  'svc.events.notification_channels.rotate_secret': {
    summary:
      'A new signing secret for a webhook channel, answered once; the previous one keeps signing beside it for the overlap (notifications:write).',
    request: RotateSecretBody.extend(ById.shape),
    reply: IssuedNotificationChannel,
    errors: write,
  },
  'svc.events.notification_channels.test': {
    summary: 'Sends a test notification through the channel now, by the delivery path (notifications:write).',
    request: ById,
    reply: NotificationDelivery,
    errors: write,
  },
  'svc.events.notification_channels.deliveries': {
    retry: 'safe',
    summary: 'The delivery log of a channel, newest first, each with its attempts (notifications:read).',
    request: DeliveryListQuery.extend(ById.shape),
    reply: Paged(NotificationDelivery),
    errors: read,
  },
  'svc.events.notification_deliveries.redeliver': {
    summary:
      'Sends a delivery again, under the same id (a receiver that has it already can drop it) (notifications:write).',
    request: ById,
    reply: NotificationDelivery,
    errors: write,
  },

  'svc.events.notification_rules.list': {
    retry: 'safe',
    summary: 'Notification rules of the clients the caller holds notifications:read on.',
    request: RuleListQuery,
    reply: Paged(NotificationRule),
    errors: read,
  },
  'svc.events.notification_rules.get': {
    retry: 'safe',
    summary: 'One notification rule (notifications:read).',
    request: ById,
    reply: NotificationRule,
    errors: read,
  },
  'svc.events.notification_rules.create': {
    summary: 'Creates a rule of a client, optionally narrowed to an environment or a host (notifications:write).',
    request: CreateRuleBody,
    reply: NotificationRule,
    errors: write,
  },
  'svc.events.notification_rules.update': {
    summary: 'Replaces a rule (notifications:write).',
    request: UpdateRuleBody.extend(ById.shape),
    reply: NotificationRule,
    errors: write,
  },
  'svc.events.notification_rules.delete': {
    summary: 'Removes a rule; its notifications stay, without it (notifications:write).',
    request: ById,
    reply: NoContent,
    errors: read,
  },

  'svc.events.maintenance_windows.list': {
    retry: 'safe',
    summary: 'Maintenance windows of the clients the caller holds notifications:read on.',
    request: WindowListQuery,
    reply: Paged(MaintenanceWindow),
    errors: read,
  },
  'svc.events.maintenance_windows.get': {
    retry: 'safe',
    summary: 'One maintenance window with its current or next occurrence (notifications:read).',
    request: ById,
    reply: MaintenanceWindow,
    errors: read,
  },
  'svc.events.maintenance_windows.create': {
    summary: 'Creates a one-off or recurring (RRULE) window of a client, environment or host (notifications:write).',
    request: CreateWindowBody,
    reply: MaintenanceWindow,
    errors: write,
  },
  'svc.events.maintenance_windows.update': {
    summary: 'Replaces a maintenance window (notifications:write).',
    request: UpdateWindowBody.extend(ById.shape),
    reply: MaintenanceWindow,
    errors: write,
  },
  'svc.events.maintenance_windows.delete': {
    summary: 'Removes a maintenance window (notifications:write).',
    request: ById,
    reply: NoContent,
    errors: read,
  },
  'svc.events.maintenance_windows.occurrences': {
    retry: 'safe',
    summary: 'The occurrences of a window between two instants, in UTC (at most 500) (notifications:read).',
    request: OccurrencesQuery.extend(ById.shape),
    reply: z.array(Occurrence),
    errors: write,
  },

  'svc.events.notifications.list': {
    retry: 'safe',
    summary: 'Notifications, newest first (notifications:read).',
    request: NotificationListQuery,
    reply: Paged(Notification),
    errors: read,
  },
  'svc.events.notifications.get': {
    retry: 'safe',
    summary: 'One notification (notifications:read).',
    request: ById,
    reply: Notification,
    errors: read,
  },
  'svc.events.notifications.acknowledge': {
    summary: 'Acknowledges a notification: its escalation stops (notifications:write).',
    request: ById,
    reply: Notification,
    errors: read,
  },
  'svc.events.notifications.acknowledge_link': {
    summary: 'Acknowledges the notification a signed link names (the link in its e-mail or chat message); no sign-in.',
    request: AckLinkBody,
    reply: AckLinkReply,
    errors: ['bad_request', 'not_found'],
  },
});
