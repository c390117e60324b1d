import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { Paged, Paging } from '../paging.ts';
import { subjects } from '../subject.ts';
import { AlertRouter, ReceiverSource, WebhookSource } from './events-records.ts';

/**
 * Receivers of external events (docs/api/events.md#receiver-management, #receivers-public): webhook endpoints for code
 * hosts and a delivery tool (`webhooks:*`), alert sources for the alert router (`alertsources:*`), the public receivers
 * they answer on (token in the path), and the voice provider's callbacks (signature header).
 */

const Timestamp = z.iso.datetime();
const ReceiverName = z.string().trim().min(1, 'must not be empty').max(200);
/** A shared secret as the sender is configured with it: kept exactly (no trimming), sealed at rest. */
const SharedSecret = z.string().min(1, 'must not be empty').max(256);
/** E.164: `+`, country code and number, 8 to 16 characters. */
export const PhoneNumber = z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +15551234567');

const Receiver = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  source: ReceiverSource,
  name: z.string(),
  /** A shared secret is set (it is never shown again). */
  has_secret: z.boolean(),
  /** The token's first characters, to tell tokens apart. */
  token_prefix: z.string(),
  last_delivery_at: Timestamp.nullable(),
  created_by: z.uuid().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const WebhookEndpoint = Receiver.extend({ source: WebhookSource });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;
export const AlertSource = Receiver.extend({ source: AlertRouter, oncall_phone: PhoneNumber.nullable() });
export type AlertSource = z.infer<typeof AlertSource>;

/** Creation (and token rotation) answers the token once, with the full receiver URL. */
const Issued = { token: z.string(), url: z.string() };
export const IssuedWebhookEndpoint = WebhookEndpoint.extend({
  ...Issued,
  token: Issued.token.optional(),
  url: Issued.url.optional(),
});
export const IssuedAlertSource = AlertSource.extend({
  ...Issued,
  token: Issued.token.optional(),
  url: Issued.url.optional(),
});

export const CreateWebhookEndpointBody = z.object({
  client_id: z.uuid(),
  environment_id: z.uuid().nullable().default(null),
  source: WebhookSource,
  name: ReceiverName,
  secret: SharedSecret.nullable().default(null),
});
export const CreateAlertSourceBody = z.object({
  client_id: z.uuid(),
  environment_id: z.uuid().nullable().default(null),
  source: AlertRouter.default('alertmanager'),
  name: ReceiverName,
  secret: SharedSecret.nullable().default(null),
  oncall_phone: PhoneNumber.nullable().default(null),
});

/**
 * PUT: `name` replaced; `environment_id`, `secret`, `oncall_phone` replaced when present (null clears); the client and
 * source never change: sent unchanged they are accepted, others are 400 (contracts/immutable.ts).
 */
const UpdateReceiverBody = z.object({
  name: ReceiverName,
  environment_id: z.uuid().nullable().optional(),
  secret: SharedSecret.nullable().optional(),
  /** A new token: the old one stops working at once; the answer carries the new one (shown once). */
  rotate_token: z.boolean().default(false),
});
export const RECEIVER_IMMUTABLE = ['client_id', 'source'] as const;
export const UpdateWebhookEndpointBody = UpdateReceiverBody.extend(
  immutableFields(WebhookEndpoint, RECEIVER_IMMUTABLE),
);
export const UpdateAlertSourceBody = UpdateReceiverBody.extend({
  oncall_phone: PhoneNumber.nullable().optional(),
  ...immutableFields(AlertSource, RECEIVER_IMMUTABLE),
});

export const WebhookEndpointListQuery = z.object({
  ...Paging,
  client_id: z.uuid().optional(),
  source: WebhookSource.optional(),
});
export const AlertSourceListQuery = z.object({ ...Paging, client_id: z.uuid().optional() });
export const RejectedListQuery = z.object(Paging);

export const RejectedDelivery = z.object({
  id: z.uuid(),
  receiver_id: z.uuid(),
  source: ReceiverSource,
  event: z.string(),
  reason: z.string(),
  external_id: z.string(),
  headers: z.record(z.string(), z.string()),
  body_excerpt: z.string(),
  received_at: Timestamp,
});
export type RejectedDelivery = z.infer<typeof RejectedDelivery>;

const ById = z.object({ id: z.uuid() });
const NoContent = z.object({});

// ---------------------------------------------------------------------------------------------------------------
// Public receivers

/** Request headers a receiver reads (lower-case names); the gateway passes only these. */
export const RECEIVER_HEADERS = [
  'content-type',
  'user-agent',
  'authorization',
  'x-github-event',
  'x-github-delivery',
  'x-hub-signature-256',
  'x-gitlab-event',
  'x-gitlab-token',
  'x-gitlab-event-uuid',
  'x-gitlab-webhook-uuid',
] as const;

/** 1 MB of body, base64 (4/3) with a little room. */
const MAX_BODY_B64 = Math.ceil((1024 * 1024 * 4) / 3) + 8;

export const ReceiveRequest = z.object({
  source: ReceiverSource,
  token: z.string().min(1).max(200),
  headers: z.record(z.string(), z.string().max(8192)),
  /** The raw body, base64: signatures are over its exact bytes. */
  body_b64: z.string().max(MAX_BODY_B64),
});
/**
 * What became of a delivery: accepted or duplicate (durable, stored by a consumer), ignored (nothing to record) or pong.
 * The gateway answers 202 for the first two and 200 for the others.
 */
export const ReceiveReply = z.object({
  outcome: z.enum(['accepted', 'duplicate', 'ignored', 'pong']),
  delivery_id: z.uuid().nullable(),
  message: z.string(),
});
export type ReceiveReply = z.infer<typeof ReceiveReply>;

// ---------------------------------------------------------------------------------------------------------------
// Voice provider callbacks (Twilio's webhooks, form-encoded)

/** What a callback carries for its signature check: the URL it was sent to (path and query) and its form fields. */
const VoiceCallback = {
  /** The request's path and query, as received (`/api/v1/twilio/voice/gather?call=…`). */
  path: z.string().min(1).max(2000),
  params: z.array(z.tuple([z.string().max(200), z.string().max(4000)])).max(200),
  signature: z.string().max(200),
};
export const TwimlReply = z.object({ twiml: z.string() });

export const eventsSubjects = subjects({
  'svc.events.webhook_endpoints.list': {
    retry: 'safe',
    summary: 'Webhook endpoints of the clients the caller holds webhooks:read on.',
    request: WebhookEndpointListQuery,
    reply: Paged(WebhookEndpoint),
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.webhook_endpoints.get': {
    retry: 'safe',
    summary: 'One webhook endpoint (webhooks:read).',
    request: ById,
    reply: WebhookEndpoint,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.webhook_endpoints.create': {
    summary:
      'Creates a webhook endpoint for a client (webhooks:write); its token is shown once with the receiver URL and stored hashed.',
    request: CreateWebhookEndpointBody,
    reply: IssuedWebhookEndpoint,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.webhook_endpoints.update': {
    summary:
      'Renames, moves, sets or clears the secret of, or rotates the token of a webhook endpoint (webhooks:write).',
    request: UpdateWebhookEndpointBody.extend(ById.shape),
    reply: IssuedWebhookEndpoint,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.events.webhook_endpoints.delete': {
    summary: 'Removes a webhook endpoint: its token answers 404 from then on; recorded deploys stay (webhooks:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.webhook_endpoints.rejected': {
    retry: 'safe',
    summary:
      'Deliveries of a webhook endpoint that could not be used, newest first, with their reason (webhooks:read).',
    request: RejectedListQuery.extend(ById.shape),
    reply: Paged(RejectedDelivery),
    errors: ['forbidden', 'not_found'],
  },

  'svc.events.alert_sources.list': {
    retry: 'safe',
    summary: 'Alert sources of the clients the caller holds alertsources:read on.',
    request: AlertSourceListQuery,
    reply: Paged(AlertSource),
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.alert_sources.get': {
    retry: 'safe',
    summary: 'One alert source (alertsources:read).',
    request: ById,
    reply: AlertSource,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.alert_sources.create': {
    summary:
      'Creates an alert source for a client (alertsources:write), optionally with an on-call phone number; its token is shown once.',
    request: CreateAlertSourceBody,
    reply: IssuedAlertSource,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.alert_sources.update': {
    summary:
      'Renames, moves, sets or clears the secret or on-call number of, or rotates the token of an alert source (alertsources:write).',
    request: UpdateAlertSourceBody.extend(ById.shape),
    reply: IssuedAlertSource,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.events.alert_sources.delete': {
    summary: 'Removes an alert source: its token answers 404 from then on; alert groups stay (alertsources:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.alert_sources.rejected': {
    retry: 'safe',
    summary:
      'Deliveries of an alert source that could not be used, newest first, with their reason (alertsources:read).',
    request: RejectedListQuery.extend(ById.shape),
    reply: Paged(RejectedDelivery),
    errors: ['forbidden', 'not_found'],
  },

  'svc.events.receive': {
    summary:
      'A public receiver delivery (token in the path): checks the token and signature, parses the payload, and answers once the delivery is durable in JetStream; a consumer stores it.',
    request: ReceiveRequest,
    reply: ReceiveReply,
    errors: ['bad_request', 'unauthorized', 'not_found', 'unavailable'],
  },

  'svc.events.voice.twiml': {
    summary:
      'Voice provider callback: the TwiML that reads the alert of a call and gathers one digit (signature checked).',
    request: z.object({ call_id: z.uuid(), ...VoiceCallback }),
    reply: TwimlReply,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.voice.gather': {
    summary: 'Voice provider callback: the digit pressed; 1 acknowledges the alert group (signature checked).',
    request: z.object(VoiceCallback),
    reply: TwimlReply,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.voice.status': {
    summary:
      'Voice provider callback: the outcome of a call; an unanswered call is placed again, a bounded number of times (signature checked).',
    request: z.object(VoiceCallback),
    reply: NoContent,
    errors: ['bad_request', 'forbidden', 'not_found'],
  },
});
