import { z } from 'zod';
import { AlertGroupChanged, DeliveryJob, DeployRecorded, PageJob, ReceiverChanged } from './domains/events-records.ts';
import { NotifyCheckJob, NotifyJob } from './domains/events-notifications.ts';
import { AgentStatusChanged, FileChanged } from './domains/fleet-agents.ts';
import { AccountingSyncJob } from './domains/invoice-accounting.ts';
import { InvoiceReviewChanged } from './domains/invoice.ts';
import { AnalyticsBatch } from './domains/invoice-ingest.ts';
import { SlaChanged } from './domains/servicedesk.ts';
import { EmailLookup } from './fields.ts';

/**
 * The durable side of the wire: the JetStream streams the system declares at boot, and the typed table of durable
 * subjects (events and work) with their payload schemas. Request-reply subjects live in catalogue.ts; these are the
 * fire-and-remember ones.
 *
 * Subject spaces: `svc.evt.>`, `svc.work.>`, `svc.dlq.>`, `svc.upload.>` and `svc.agent.*.*` are captured by streams, so no
 * request-reply domain may be called `evt`, `work`, `dlq` or `upload`, and no request subject may have the shape
 * `svc.agent.<x>.<y>` (JetStream would store the request and answer it with a PubAck).
 */

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A stream declaration, independent of the NATS client so contracts/ stays importable everywhere. */
export const StreamSpec = z.object({
  name: z.string().regex(/^[A-Z][A-Z0-9_]*$/, 'stream names are UPPER_SNAKE'),
  description: z.string(),
  subjects: z.array(z.string().min(1)).min(1),
  retention: z.enum(['limits', 'workqueue', 'interest']),
  storage: z.enum(['file', 'memory']).default('file'),
  /** 0 keeps messages until another limit (or, for work queues, the ack) removes them. */
  maxAgeMs: z.number().int().nonnegative().default(0),
  /** How long a `Nats-Msg-Id` is remembered: a publish retried within it is stored once. */
  duplicateWindowMs: z
    .number()
    .int()
    .positive()
    .default(2 * MINUTE),
  /** -1 = unlimited. */
  maxBytes: z.number().int().default(-1),
  maxMsgSize: z.number().int().default(-1),
  // No replicas here: every stream gets the deployment's (SVC_NATS_REPLICAS, platform/replicas.ts).
});
export type StreamSpec = z.output<typeof StreamSpec>;

const stream = (spec: z.input<typeof StreamSpec>): StreamSpec => {
  const parsed = StreamSpec.parse(spec);
  // A duplicate window longer than the max age is rejected by the server; catch it at import time instead.
  if (parsed.maxAgeMs > 0 && parsed.duplicateWindowMs > parsed.maxAgeMs)
    throw new Error(`${parsed.name}: duplicate window exceeds max age`);
  return parsed;
};

export const streams = {
  SVC_EVENTS: stream({
    name: 'SVC_EVENTS',
    description:
      'Domain events (audit entries, cache invalidations, invoice finalized, agent status, deploys, alerts); durable consumers.',
    subjects: ['svc.evt.>'],
    retention: 'limits',
    storage: 'file',
    maxAgeMs: 30 * DAY,
    duplicateWindowMs: 2 * MINUTE,
  }),
  SVC_WORK: stream({
    name: 'SVC_WORK',
    description:
      'Jobs that must survive a crash: e-mail, PDF rendering, accounting sync, bulk generation. Removed once acked.',
    subjects: ['svc.work.>'],
    retention: 'workqueue',
    storage: 'file',
    duplicateWindowMs: 2 * MINUTE,
  }),
  SVC_DLQ: stream({
    name: 'SVC_DLQ',
    description:
      'Dead letters: messages a durable consumer gave up on, on svc.dlq.<durable>, with the reason in headers.',
    subjects: ['svc.dlq.>'],
    retention: 'limits',
    storage: 'file',
    maxAgeMs: 30 * DAY,
  }),
  SVC_TELEMETRY: stream({
    name: 'SVC_TELEMETRY',
    description: 'Agent telemetry published on svc.agent.{agentID}.<kind>, ingested by durable consumers.',
    subjects: ['svc.agent.*.*'],
    retention: 'limits',
    storage: 'file',
    maxAgeMs: 7 * DAY,
  }),
  SVC_UPLOADS: stream({
    name: 'SVC_UPLOADS',
    description:
      'Files on their way from a gateway to an actor (service-desk attachments), in chunks on svc.upload.<ns>.<id>; purged once used.',
    subjects: ['svc.upload.>'],
    retention: 'limits',
    storage: 'file',
    maxAgeMs: 60 * MINUTE,
    duplicateWindowMs: 2 * MINUTE,
    maxMsgSize: 1024 * 1024,
  }),
} as const satisfies Record<string, StreamSpec>;

export type StreamName = keyof typeof streams;
export const allStreams: readonly StreamSpec[] = Object.values(streams);

for (const [key, spec] of Object.entries(streams)) {
  if (key !== spec.name) throw new Error(`stream table key ${key} differs from its name ${spec.name}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Durable subjects

/** One durable subject: what its payload is. Consumers parse with `payload`; `publishDurable` parses before sending. */
export interface DurableSpec<P extends z.ZodType = z.ZodType> {
  readonly payload: P;
  readonly summary: string;
}

type DurableTable<Prefix extends string, T> = { [K in keyof T]: K extends `${Prefix}${string}` ? DurableSpec : never };

/**
 * Helpers a domain uses in its own contract file (`contracts/domains/<domain>.ts`), then spreads into
 * `eventSubjects` / `workSubjects` below. A key outside `svc.evt.` / `svc.work.` is a compile error.
 */
export const defineEvents = <const T extends DurableTable<'svc.evt.', T>>(table: T): T => table;
export const defineWork = <const T extends DurableTable<'svc.work.', T>>(table: T): T => table;

/** An audit-log entry, as stored by the audit actor. */
export const AuditEntry = z.object({
  id: z.uuid(),
  actor_id: z.uuid().nullable(),
  actor_email: z.string().nullable(),
  actor_type: z.enum(['user', 'service_account', 'anonymous']),
  action: z.string().min(1),
  resource_type: z.string().min(1),
  resource_id: z.string().nullable(),
  /**
   * The clients the entry concerns: it is shown to holders of audit:read on every one of them. None: a global entry
   * (logins, users, roles), shown only to super admins and holders of audit:read on all clients. Events published
   * before the field existed carry none.
   */
  client_ids: z.array(z.uuid()).default([]),
  details: z.record(z.string(), z.unknown()),
  ip: z.string().nullable(),
  user_agent: z.string().nullable(),
  request_id: z.string().nullable(),
  created_at: z.iso.datetime({ offset: true }),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/** Drop cached access maps: of some users, or of everyone (a role's permissions changed). */
export const AccessInvalidated = z.union([
  z.object({ all: z.literal(true) }),
  z.object({ user_ids: z.array(z.uuid()) }),
]);
export type AccessInvalidated = z.infer<typeof AccessInvalidated>;

/** One e-mail to send. `kind` names the template/purpose (invite, password_reset, invoice, ...) for logs and metrics. */
export const EmailSend = z.object({
  to: z.string().min(3),
  subject: z.string().min(1),
  text: z.string(),
  html: z.string().optional(),
  kind: z.string().min(1),
});
export type EmailSend = z.infer<typeof EmailSend>;

const coreEvents = defineEvents({
  'svc.evt.audit.recorded': { payload: AuditEntry, summary: 'An audit entry was recorded; the audit actor stores it.' },
  'svc.evt.access.invalidated': {
    payload: AccessInvalidated,
    summary: 'Cached access maps are stale; every gateway/actor cache drops them.',
  },
});

/** A forgot-password request: handled off the request path so every e-mail gets the same answer in the same time. */
export const PasswordResetRequested = z.object({
  email: EmailLookup,
  request_id: z.string(),
  ip: z.string().optional(),
});
export type PasswordResetRequested = z.infer<typeof PasswordResetRequested>;

const coreWork = defineWork({
  'svc.work.email.send': {
    payload: EmailSend,
    summary: 'Send one e-mail (SMTP, hosted provider, or stdout when none is configured).',
  },
  'svc.work.identity.password_reset': {
    payload: PasswordResetRequested,
    summary: 'Issue a reset token and mail it, when the e-mail belongs to an active account.',
  },
});

/** The invoicing domain's durable work (its payload schemas live in contracts/domains/invoice-ingest.ts). */
const invoiceWork = defineWork({
  'svc.work.invoice.analytics_ingest': {
    payload: AnalyticsBatch,
    summary:
      'A batch of analytics records (customers, applications, rate tiers, worklogs, usage) stored idempotently by the invoice domain.',
  },
  'svc.work.invoice.accounting_sync': {
    payload: AccountingSyncJob,
    summary:
      'Push one invoice to the accounting system (SVC_ACCOUNTING_URL), retried with jittered backoff and Retry-After, dead-lettered when refused or exhausted.',
  },
});

/** The fleet domain's events (payload schemas in contracts/domains/fleet-agents.ts). */
const fleetEvents = defineEvents({
  'svc.evt.fleet.agent_status': {
    payload: AgentStatusChanged,
    summary: 'An agent went online or offline (the event timeline stores these).',
  },
  'svc.evt.fleet.file_change': {
    payload: FileChanged,
    summary: 'A file under a watched path changed on a host (the event timeline stores these).',
  },
});

/** The events domain's events and work (payload schemas in contracts/domains/events-records.ts). */
const eventsEvents = defineEvents({
  'svc.evt.events.deploy': {
    payload: DeployRecorded,
    summary: 'A deploy was recorded from a receiver (the event timeline stores these).',
  },
  'svc.evt.events.alert': {
    payload: AlertGroupChanged,
    summary: 'An alert group fired, resolved or was acknowledged (the event timeline stores these).',
  },
  'svc.evt.events.receiver_changed': {
    payload: ReceiverChanged,
    summary: 'A webhook receiver or alert source changed or was removed: cached tokens are dropped.',
  },
});
const eventsWork = defineWork({
  'svc.work.events.delivery': {
    payload: DeliveryJob,
    summary:
      'A delivery a receiver accepted (answered 202) or rejected: stored as a deploy, an alert group or a rejected delivery by a consumer.',
  },
  'svc.work.events.page': {
    payload: PageJob,
    summary: "Call an alert group's on-call number through the voice provider (bounded attempts).",
  },
  'svc.work.events.notify': {
    payload: NotifyJob,
    summary:
      'Send one notification delivery to its channel: retried with exponential backoff on timeouts, 429 (Retry-After) and 5xx, dead-lettered on other 4xx or when attempts run out.',
  },
  'svc.work.events.notify_check': {
    payload: NotifyCheckJob,
    summary:
      "A delayed look at a notification: an agent still offline after its rule's minutes, the next escalation step when nobody acknowledged, a maintenance window's end.",
  },
});

/** The invoicing domain's events. */
const invoiceEvents = defineEvents({
  'svc.evt.invoice.review': {
    payload: InvoiceReviewChanged,
    summary: 'An invoice entered review (finalized) or left it (approved, rejected, declined); notifications read it.',
  },
});

/** The service desk's events. */
const servicedeskEvents = defineEvents({
  'svc.evt.servicedesk.sla': {
    payload: SlaChanged,
    summary: "A synced request's SLA cycle changed (a new breach time, paused, breached, met); notifications read it.",
  },
});

/** Every typed event subject. Add a domain's table here. */
export const eventSubjects = {
  ...coreEvents,
  ...fleetEvents,
  ...eventsEvents,
  ...invoiceEvents,
  ...servicedeskEvents,
} as const;
/** Every typed work subject. Add a domain's table here: `...invoiceWork`. */
export const workSubjects = { ...coreWork, ...invoiceWork, ...eventsWork } as const;
export const durableSubjects = { ...eventSubjects, ...workSubjects } as const;

export type EventSubject = keyof typeof eventSubjects & string;
export type WorkSubject = keyof typeof workSubjects & string;
export type DurableSubject = keyof typeof durableSubjects & string;
/** What a publisher passes (before defaults/transforms). */
export type DurableIn<S extends DurableSubject> = z.input<(typeof durableSubjects)[S]['payload']>;
/** What a consumer's handler receives. */
export type DurableOut<S extends DurableSubject> = z.output<(typeof durableSubjects)[S]['payload']>;

export const isDurableSubject = (subject: string): subject is DurableSubject => Object.hasOwn(durableSubjects, subject);

/** The payload schema of a typed durable subject, for `runConsumer({ schema })`. */
export const payloadSchema = <S extends DurableSubject>(subject: S): (typeof durableSubjects)[S]['payload'] =>
  durableSubjects[subject].payload;

// ---------------------------------------------------------------------------------------------------------------
// Subject builders

const TOKEN = /^[^\s.*>]+$/;

/** Where a durable consumer's dead letters go. Durable names are single subject tokens. */
export function dlqSubjectFor(durable: string): `svc.dlq.${string}` {
  if (!TOKEN.test(durable)) throw new Error(`durable name ${JSON.stringify(durable)} is not a single subject token`);
  return `svc.dlq.${durable}`;
}

/** Agent telemetry subject; the agent id is a subject token, so it must not contain `.`, `*`, `>` or spaces. */
export function telemetrySubject(agentId: string, kind: string): `svc.agent.${string}.${string}` {
  if (!TOKEN.test(agentId) || !TOKEN.test(kind)) throw new Error(`invalid telemetry subject tokens ${agentId}/${kind}`);
  return `svc.agent.${agentId}.${kind}`;
}

/** The filter of one telemetry kind from every agent (a consumer's `filter_subject`). */
export const telemetryFilter = (kind: string): `svc.agent.*.${string}` => `svc.agent.*.${kind}`;

const TELEMETRY_SUBJECT = /^svc\.agent\.([^\s.*>]+)\.([^\s.*>]+)$/;

/** The agent token of a telemetry subject (`svc.agent.{agentID}.<kind>`), or undefined when it is not one. */
export const agentOfTelemetrySubject = (subject: string): string | undefined => TELEMETRY_SUBJECT.exec(subject)?.[1];

/** Headers a dead letter carries besides the original message's own (`Nats-*` ones excluded). */
export const DlqHeaders = {
  subject: 'Svc-Dlq-Subject',
  error: 'Svc-Dlq-Error',
  reason: 'Svc-Dlq-Reason',
  deliveryCount: 'Svc-Dlq-Delivery-Count',
  msgId: 'Svc-Dlq-Msg-Id',
  stream: 'Svc-Dlq-Stream',
  streamSeq: 'Svc-Dlq-Stream-Seq',
  durable: 'Svc-Dlq-Durable',
} as const;

/**
 * Why a message was dead-lettered: `malformed` (payload failed its schema; retrying can't help), `rejected` (the
 * handler threw a permanent error), `failed` (the handler failed on its last allowed delivery), `exhausted`
 * (delivered past the limit without a recorded failure: its last attempt timed out or its process died).
 */
export const DlqReason = z.enum(['malformed', 'rejected', 'failed', 'exhausted']);
export type DlqReason = z.infer<typeof DlqReason>;
