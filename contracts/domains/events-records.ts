import { z } from 'zod';

/**
 * What the events domain keeps about the outside world (deploys and alert groups, parsed from the receivers' payloads)
 * and the durable payloads that carry them: a receiver parses a delivery and publishes it as work; a consumer stores
 * it and publishes the domain events the timeline and the pager react to.
 */

export const WEBHOOK_SOURCES = ['github', 'gitlab', 'argocd'] as const;
export const ALERT_ROUTERS = ['alertmanager'] as const;
export const WebhookSource = z.enum(WEBHOOK_SOURCES);
export const AlertRouter = z.enum(ALERT_ROUTERS);
export const ReceiverSource = z.enum([...WEBHOOK_SOURCES, ...ALERT_ROUTERS]);
export type ReceiverSource = z.infer<typeof ReceiverSource>;

const Time = z.iso.datetime({ offset: true });

export const DEPLOY_EVENT_TYPES = ['release', 'tag', 'deployment', 'sync_succeeded', 'sync_failed'] as const;
export const DeployEventType = z.enum(DEPLOY_EVENT_TYPES);

/** A deploy as a receiver parsed it: a code host's release, tag or deployment status, or a delivery tool's sync. */
export const DeployFacts = z.object({
  event_type: DeployEventType,
  summary: z.string().max(1000),
  app: z.string().max(500),
  revision: z.string().max(500),
  url: z.string().max(2000).nullable(),
  failed: z.boolean(),
  at: Time,
});
export type DeployFacts = z.infer<typeof DeployFacts>;

export const AlertSeverity = z.string().min(1).max(64);
export const AlertStatus = z.enum(['firing', 'resolved']);

/** One alert of an Alertmanager group, kept with the group (bounded: the first 100 of a notification). */
export const AlertItem = z.object({
  status: AlertStatus,
  labels: z.record(z.string(), z.string()),
  annotations: z.record(z.string(), z.string()),
  starts_at: Time.nullable(),
  ends_at: Time.nullable(),
  fingerprint: z.string().max(128).nullable(),
});
export type AlertItem = z.infer<typeof AlertItem>;

/** An alert group notification as a receiver parsed it (Alertmanager webhook version 4). */
export const AlertFacts = z.object({
  group_key: z.string().min(1).max(2000),
  status: AlertStatus,
  name: z.string().max(500),
  severity: AlertSeverity,
  fired_at: Time,
  resolved_at: Time.nullable(),
  /** Where the host may be read from: `host_id` labels, then `instance` / `hostname` labels (port stripped). */
  host_ids: z.array(z.string().max(64)).max(100),
  host_names: z.array(z.string().max(255)).max(100),
  alerts: z.array(AlertItem).max(100),
  external_url: z.string().max(2000).nullable(),
});
export type AlertFacts = z.infer<typeof AlertFacts>;

/** A delivery no receiver could turn into a record, kept for the receiver's admins with its reason. */
export const RejectedFacts = z.object({
  reason: z.string().min(1).max(1000),
  /** The start of the body (UTF-8, at most 4 KB); empty when the signature did not verify. */
  body_excerpt: z.string().max(8192),
  headers: z.record(z.string(), z.string()),
});
export type RejectedFacts = z.infer<typeof RejectedFacts>;

/** `svc.work.events.delivery`: one accepted delivery, stored by the events domain's delivery consumer. */
export const DeliveryJob = z.object({
  delivery_id: z.uuid(),
  receiver_id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  source: ReceiverSource,
  received_at: Time,
  /** The sender's delivery id, or a digest of the body: what makes a repeat a duplicate. */
  external_id: z.string().min(1).max(300),
  /** The sender's event name (`release`, `Tag Push Hook`, `sync_failed`, `firing`…). */
  event: z.string().max(200),
  outcome: z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('deploy'), deploy: DeployFacts }),
    z.object({ kind: z.literal('alert'), alert: AlertFacts }),
    z.object({ kind: z.literal('rejected'), rejected: RejectedFacts }),
  ]),
});
export type DeliveryJob = z.infer<typeof DeliveryJob>;

/** `svc.work.events.page`: call the on-call number of an alert group's source (attempt n of SVC_TWILIO_MAX_ATTEMPTS). */
export const PageJob = z.object({
  alert_group_id: z.uuid(),
  call_id: z.uuid(),
  attempt: z.number().int().min(1).max(10),
  /** Not before this time: the pause between an unanswered call and the next. */
  not_before: Time,
});
export type PageJob = z.infer<typeof PageJob>;

/** `svc.evt.events.deploy`: a deploy was recorded (the timeline stores it). */
export const DeployRecorded = DeployFacts.extend({
  id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  source: WebhookSource,
});
export type DeployRecorded = z.infer<typeof DeployRecorded>;

/** `svc.evt.events.alert`: an alert group fired, resolved or was acknowledged (the timeline stores it). */
export const AlertGroupChanged = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  host_id: z.uuid().nullable(),
  name: z.string(),
  severity: z.string(),
  change: z.enum(['fired', 'resolved', 'acknowledged']),
  fired_at: Time,
  resolved_at: Time.nullable(),
  at: Time,
  /** Who acknowledged (a phone number for a page), when `change` is acknowledged. */
  by: z.string().nullable(),
  /**
   * Each alert's labels as this change stored them (fired and resolved changes): a reader matches on them without
   * reading the group back, which it could do before the change is committed. Absent on older events.
   */
  labels: z.array(z.record(z.string(), z.string())).max(100).optional(),
});
export type AlertGroupChanged = z.infer<typeof AlertGroupChanged>;

/** `svc.evt.events.receiver_changed`: a receiver was changed or removed; every instance forgets its cached token. */
export const ReceiverChanged = z.object({
  receiver_id: z.uuid(),
  token_hashes: z.array(z.string().regex(/^[0-9a-f]{64}$/)),
});
export type ReceiverChanged = z.infer<typeof ReceiverChanged>;
