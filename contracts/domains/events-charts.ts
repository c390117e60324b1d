import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { subjects } from '../subject.ts';
import { WebhookSource } from './events-records.ts';

/**
 * The event timeline, notes on charts and chart markers (docs/api/events.md: #event-timeline, #notes-on-charts,
 * #chart-markers).
 */

const Timestamp = z.iso.datetime();
/** RFC 3339 with `Z` or an offset. */
const Rfc3339 = z.iso.datetime({ offset: true, error: 'must be an RFC 3339 date-time such as 2026-01-02T03:04:05Z' });
const ms = (t: string): number => Date.parse(t);

// ---------------------------------------------------------------------------------------------------------------
// Timeline

export const TIMELINE_MAX_LIMIT = 1000;
export const TimelineEventType = z.enum(['deploy', 'file_change', 'agent_status', 'alert', 'notification']);
export type TimelineEventType = z.infer<typeof TimelineEventType>;

export const TimelineEvent = z.object({
  timestamp: Timestamp,
  event_type: TimelineEventType,
  title: z.string(),
  description: z.string(),
  host_id: z.uuid().nullable(),
  environment_id: z.uuid().nullable(),
});
export type TimelineEvent = z.infer<typeof TimelineEvent>;

export const TimelineQuery = z
  .object({
    start: Rfc3339,
    end: Rfc3339,
    host_id: z.uuid().optional(),
    environment_id: z.uuid().optional(),
    event_type: TimelineEventType.optional(),
    limit: z.coerce.number().int().min(1).max(TIMELINE_MAX_LIMIT, `must be at most ${TIMELINE_MAX_LIMIT}`).default(100),
  })
  .refine((q) => ms(q.start) <= ms(q.end), { message: 'must not be before start', path: ['end'] });

// ---------------------------------------------------------------------------------------------------------------
// Notes (annotations)

export const NOTE_MAX_LIST = 500;
export const NoteScope = z.enum(['host', 'environment', 'client']);
export const NoteKind = z.enum(['note', 'maintenance', 'deploy']);
/** 1 to 500 characters (Unicode code points, so an emoji is one), not only white space. */
export const NoteText = z
  .string({ error: 'is required' })
  .refine((t) => t.trim().length > 0, 'must not be empty')
  .refine((t) => [...t].length <= 500, 'must be at most 500 characters');

export const Note = z.object({
  id: z.uuid(),
  scope: NoteScope,
  kind: NoteKind,
  client_id: z.uuid(),
  environment_id: z.uuid().nullable(),
  host_id: z.uuid().nullable(),
  timestamp: Timestamp,
  ends_at: Timestamp.nullable(),
  text: z.string(),
  created_by: z.uuid(),
  created_by_name: z.string(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Note = z.infer<typeof Note>;

const endsAfter = <T extends { timestamp: string; ends_at?: string | null | undefined }>(b: T): boolean =>
  b.ends_at === undefined || b.ends_at === null || ms(b.ends_at) > ms(b.timestamp);
const ENDS_AFTER = { message: 'must be after timestamp', path: ['ends_at'] };

const SCOPE_TARGET = { host: 'host_id', environment: 'environment_id', client: 'client_id' } as const;
const TARGETS = ['host_id', 'environment_id', 'client_id'] as const;

export const CreateNoteBody = z
  .object({
    scope: NoteScope,
    host_id: z.uuid().optional(),
    environment_id: z.uuid().optional(),
    client_id: z.uuid().optional(),
    kind: NoteKind.default('note'),
    timestamp: Rfc3339,
    ends_at: Rfc3339.nullable().optional(),
    text: NoteText,
  })
  .superRefine((b, ctx) => {
    const want = SCOPE_TARGET[b.scope];
    if (b[want] === undefined)
      ctx.addIssue({ code: 'custom', message: `is required for scope ${b.scope}`, path: [want] });
    for (const other of TARGETS) {
      if (other !== want && b[other] !== undefined)
        ctx.addIssue({
          code: 'custom',
          message: `must not be given for scope ${b.scope} (give only ${want})`,
          path: [other],
        });
    }
  })
  .refine(endsAfter, ENDS_AFTER);

/**
 * PUT replaces kind, timestamp, ends_at and text; omitting ends_at makes a point. Scope, target and author never change:
 * sent unchanged they are accepted, others are 400 (contracts/immutable.ts).
 */
export const IMMUTABLE_NOTE_FIELDS = [
  'scope',
  'host_id',
  'environment_id',
  'client_id',
  'created_by',
  'created_by_name',
] as const;
export const UpdateNoteBody = z
  .object({
    kind: NoteKind.default('note'),
    timestamp: Rfc3339,
    ends_at: Rfc3339.nullable().optional(),
    text: NoteText,
    ...immutableFields(Note, IMMUTABLE_NOTE_FIELDS),
  })
  .refine(endsAfter, ENDS_AFTER);

/** Exactly one of host_id / environment_id / client_id, and the range. */
const oneTarget = <
  T extends { host_id?: string | undefined; environment_id?: string | undefined; client_id?: string | undefined },
>(
  q: T,
): boolean => TARGETS.filter((t) => q[t] !== undefined).length === 1;
const ONE_TARGET = { message: 'give exactly one of host_id, environment_id, client_id', path: ['host_id'] };
const ORDERED = { message: 'must not be before start', path: ['end'] };

export const NoteListQuery = z
  .object({
    host_id: z.uuid().optional(),
    environment_id: z.uuid().optional(),
    client_id: z.uuid().optional(),
    start: Rfc3339,
    end: Rfc3339,
  })
  .refine(oneTarget, ONE_TARGET)
  .refine((q) => ms(q.start) <= ms(q.end), ORDERED);

// ---------------------------------------------------------------------------------------------------------------
// Chart markers

export const MARKER_MAX_RANGE_MS = 30 * 86_400_000;
export const MARKER_MAX_ALERTS = 200;
export const MARKER_MAX_DEPLOYS = 100;
export const MarkerType = z.enum(['alerts', 'deploys']);

export const AlertMarker = z.object({
  id: z.uuid(),
  name: z.string(),
  severity: z.string(),
  /** `firing`, `acknowledged` (firing, acknowledged by someone) or `resolved`. */
  status: z.enum(['firing', 'acknowledged', 'resolved']),
  fired_at: Timestamp,
  resolved_at: Timestamp.nullable(),
  host_id: z.uuid().nullable(),
});
export const DeployMarker = z.object({
  id: z.uuid(),
  at: Timestamp,
  source: WebhookSource,
  event_type: z.string(),
  summary: z.string(),
  app: z.string(),
  revision: z.string(),
  url: z.string().nullable(),
  failed: z.boolean(),
});

export const MarkerQuery = z
  .object({
    host_id: z.uuid().optional(),
    environment_id: z.uuid().optional(),
    client_id: z.uuid().optional(),
    start: Rfc3339,
    end: Rfc3339,
    /** Default: both. */
    types: z.array(MarkerType).min(1).max(2).default(['alerts', 'deploys']),
  })
  .refine(oneTarget, ONE_TARGET)
  .refine((q) => ms(q.start) <= ms(q.end), ORDERED)
  .refine((q) => ms(q.end) - ms(q.start) <= MARKER_MAX_RANGE_MS, {
    message: 'the range is at most 30 days',
    path: ['end'],
  });

const ById = z.object({ id: z.uuid() });

export const eventsChartSubjects = subjects({
  'svc.events.timeline': {
    retry: 'safe',
    summary:
      'Deploys, file changes, agent status changes and alert changes in a time range, newest first, limited to what the caller may read (changes:read, hosts:read, alerts:read).',
    request: TimelineQuery,
    reply: z.array(TimelineEvent),
    errors: ['forbidden', 'not_found'],
  },

  'svc.events.annotations.create': {
    summary:
      'Creates a note on a host, environment or client chart (annotations:write at its scope; signed-in users only).',
    request: CreateNoteBody,
    reply: Note,
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.annotations.list': {
    retry: 'safe',
    summary:
      'Notes shown on a chart, inherited from its environment and client (metrics:read on the target; rows within the caller’s metrics:read scope).',
    request: NoteListQuery,
    reply: z.array(Note),
    errors: ['forbidden', 'not_found'],
  },
  'svc.events.annotations.update': {
    summary: 'Replaces the kind, times and text of a note (its author, with annotations:write at its scope).',
    request: z.intersection(UpdateNoteBody, ById),
    reply: Note,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.events.annotations.delete': {
    summary: 'Deletes a note (its author, a holder of annotations:write at its scope, or a super admin).',
    request: ById,
    reply: z.object({}),
    errors: ['forbidden', 'not_found'],
  },

  'svc.events.chart_markers': {
    retry: 'safe',
    summary:
      'Alert windows and deploys to mark on a host, environment or client chart (metrics:read; alerts need alerts:read, deploys changes:read).',
    request: MarkerQuery,
    reply: z.object({ alerts: z.array(AlertMarker), deploys: z.array(DeployMarker) }),
    errors: ['forbidden', 'not_found'],
  },
});
