import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { Paged, Paging } from '../paging.ts';
import { subjects } from '../subject.ts';

/**
 * Service desk over the external issue tracker (docs/api/service-desk.md): organization mappings, the
 * read store's routes (tickets, board, metrics, export, action log) and the admin sync trigger. The proxy routes
 * (comments, transitions, approvals, attachments, request creation, request-type fields) are in servicedesk-proxy.ts.
 */

/** `SUP-123`: a project key (a capital letter, then capitals or digits) and the issue number. */
export const ISSUE_KEY = /^[A-Z][A-Z0-9]+-\d+$/;
export const IssueKey = z
  .string()
  .max(64)
  .regex(ISSUE_KEY, 'must be an issue key such as SUP-123 ([A-Z][A-Z0-9]+-digits)');
/** Ids the tracker hands out as numeric strings (service desks, request types, organizations, approvals, transitions). */
export const NumericId = z.string().max(18).regex(/^\d+$/, 'must be a numeric id');
const ProjectKey = z.string().regex(/^[A-Z][A-Z0-9]{1,9}$/, 'must be a project key such as SUP');
const Label = z.string().trim().min(1).max(255).regex(/^\S+$/, 'labels contain no spaces');
const Timestamp = z.iso.datetime();
const NoContent = z.object({});
/** A query flag (`true`/`false`/`1`/`0`), or the boolean it became at the gateway. */
const queryBool = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1'),
]);
/** A date (`2026-01-31`, the whole day) or a date-time with zone. */
const DateOrDateTime = z.union([z.iso.date(), z.iso.datetime({ offset: true })]);

// ---------------------------------------------------------------------------------------------------------------
// Organization mappings (bodies are ours: the spec leaves them open)

export const Mapping = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  organization_id: z.string(),
  organization_name: z.string(),
  service_desk_ids: z.array(z.string()),
  project_keys: z.array(z.string()),
  labels: z.array(z.string()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Mapping = z.infer<typeof Mapping>;

const MappingFields = {
  /** The tracker organization (its numeric id; the name is read from the tracker). */
  organization_id: NumericId,
  /** Service desks of the organization this client works in (at least one; checked against the tracker). */
  service_desk_ids: z.array(NumericId).min(1, 'name at least one service desk').max(50),
  /** Support projects whose requests the client sees; empty = the projects of the service desks above. */
  project_keys: z.array(ProjectKey).max(50).default([]),
  /** When not empty, only requests carrying at least one of these labels; requests created through a mapping get them. */
  labels: z.array(Label).max(50).default([]),
};
export const CreateMappingBody = z.object({ client_id: z.uuid(), ...MappingFields });
/** The client is fixed at creation: echoing it is fine, another is 400 (contracts/immutable.ts). */
export const MAPPING_IMMUTABLE = ['client_id'] as const;
export const UpdateMappingBody = z.object({ ...MappingFields, ...immutableFields(Mapping, MAPPING_IMMUTABLE) });
export const MappingListQuery = z.object({ ...Paging, client_id: z.uuid().optional() });
/** `organizations` (a read route): the mapping list, narrowed to one organization; required for super admins. */
export const OrganizationListQuery = MappingListQuery.extend({ organization_id: NumericId.optional() });

// ---------------------------------------------------------------------------------------------------------------
// Tickets (requests in the read store)

export const SORT_COLUMNS = ['created', 'updated', 'priority', 'status', 'issue_key', 'summary', 'assignee'] as const;

/** Filters shared by tickets, kanban and export. */
export const TicketFilters = z.object({
  /** Narrows to one mapped tracker organization; required for super admins. */
  organization_id: NumericId.optional(),
  /** Narrows to the mappings of one client. */
  client_id: z.uuid().optional(),
  sort_by: z.enum(SORT_COLUMNS).default('updated'),
  sort_dir: z
    .enum(['ASC', 'DESC', 'asc', 'desc'])
    .default('DESC')
    .transform((v) => v.toUpperCase() as 'ASC' | 'DESC'),
  status: z.string().trim().min(1).max(200).optional(),
  priority: z.string().trim().min(1).max(200).optional(),
  issue_type: z.string().trim().min(1).max(200).optional(),
  assignee: z.string().trim().min(1).max(320).optional(),
  search: z.string().trim().min(1).max(200).optional(),
  date_from: DateOrDateTime.optional(),
  date_to: DateOrDateTime.optional(),
  my_requests: queryBool.default(false),
});
export const TicketListQuery = TicketFilters.extend(Paging);

export const Ticket = z.object({
  issue_key: z.string(),
  issue_id: z.string().nullable(),
  project_key: z.string(),
  service_desk_id: z.string().nullable(),
  request_type_id: z.string().nullable(),
  request_type: z.string().nullable(),
  summary: z.string(),
  status: z.string(),
  /** `new` (To Do), `indeterminate` (In Progress), `done` (Done): the tracker's status categories. */
  status_category: z.enum(['new', 'indeterminate', 'done']),
  priority: z.string().nullable(),
  issue_type: z.string().nullable(),
  assignee: z.string().nullable(),
  assignee_email: z.string().nullable(),
  reporter_name: z.string().nullable(),
  reporter_email: z.string().nullable(),
  organization_ids: z.array(z.string()),
  labels: z.array(z.string()),
  /** The engineering issue linked to this support request, when there is one. */
  linked_issue_key: z.string().nullable(),
  created: Timestamp,
  updated: Timestamp,
  resolved: Timestamp.nullable(),
  due_date: z.iso.date().nullable(),
  /** True while a write made through this service (a create, a transition) is shown ahead of the store. */
  pending: z.boolean(),
});
export type Ticket = z.infer<typeof Ticket>;

export const StatusChange = z.object({
  from_status: z.string().nullable(),
  to_status: z.string(),
  changed_at: Timestamp,
});

export const SlaCycle = z.object({
  name: z.string(),
  state: z.enum(['completed', 'ongoing']),
  start: Timestamp.nullable(),
  stop: Timestamp.nullable(),
  breached: z.boolean(),
  paused: z.boolean(),
  goal_ms: z.number().int().nullable(),
  elapsed_ms: z.number().int().nullable(),
});
export type SlaCycle = z.infer<typeof SlaCycle>;

export const TicketSla = z.object({
  /** 1 when the first response came within its SLA goal, otherwise 0 (breached, or no response yet). */
  first_response_sla_met: z.union([z.literal(0), z.literal(1)]),
  first_response_hours: z.number().nullable(),
  /** `met`, `breached`, `in_progress`, `paused` or `none` (no resolution SLA on the request). */
  resolution_sla_status: z.string(),
  resolution_hours: z.number().nullable(),
  cycles: z.array(SlaCycle),
});

export const TicketDelivery = z.object({
  started_at: Timestamp,
  resolved_at: Timestamp.nullable(),
  due_date: z.iso.date().nullable(),
  /** Days from start (first move into an In Progress status, else creation) to resolution, or to now while open. */
  cycle_time_days: z.number(),
  /** 1 when resolved (or, while open, still) within the due date, or, without one, within the resolution SLA. */
  is_on_time: z.union([z.literal(0), z.literal(1)]),
});

export const TicketDetail = z.object({
  ticket: Ticket,
  status_history: z.array(StatusChange),
  sla: TicketSla,
  delivery: TicketDelivery,
});

export const KanbanBoard = z.object({
  columns: z.array(
    z.object({
      category: z.enum(['To Do', 'In Progress', 'Done']),
      status_category: z.enum(['new', 'indeterminate', 'done']),
      count: z.number().int(),
      statuses: z.array(z.object({ status: z.string(), count: z.number().int(), tickets: z.array(Ticket) })),
    }),
  ),
  /** Requests matching the filters; the board shows at most `limit` of them. */
  total: z.number().int(),
  shown: z.number().int(),
  limit: z.number().int(),
  truncated: z.boolean(),
});

const ScopeQuery = { organization_id: NumericId.optional(), client_id: z.uuid().optional() };
export const MetricsRangeQuery = z.object({
  ...ScopeQuery,
  date_from: DateOrDateTime.optional(),
  date_to: DateOrDateTime.optional(),
});
export const MetricsScopeQuery = z.object(ScopeQuery);

const Num = z.number().nullable();
export const SlaMetrics = z.object({
  date_from: Timestamp.nullable(),
  date_to: Timestamp.nullable(),
  total_requests: z.number().int(),
  avg_first_response_hours: Num,
  avg_resolution_hours: Num,
  first_response_sla_percent: Num,
  resolution_sla_percent: Num,
  breach_count: z.number().int(),
});
export const DeliveryMetrics = z.object({
  date_from: Timestamp.nullable(),
  date_to: Timestamp.nullable(),
  resolved_count: z.number().int(),
  avg_cycle_time_days: Num,
  median_cycle_time_days: Num,
  p90_cycle_time_days: Num,
  throughput: z.number().int(),
  throughput_per_week: Num,
  on_time_percent: Num,
});
export const SummaryMetrics = z.object({
  open_count: z.number().int(),
  resolved_count: z.number().int(),
  mtta_hours: Num,
  mttr_hours: Num,
  sla_compliance_percent: Num,
  throughput_30d: z.number().int(),
});

export const CsvExport = z.object({ filename: z.string(), rows: z.number().int(), csv: z.string() });

export const Action = z.object({
  id: z.uuid(),
  issue_key: z.string(),
  action: z.string(),
  actor_id: z.string().nullable(),
  actor_email: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
  created_at: Timestamp,
});

export const SyncReport = z.object({
  organizations: z.array(
    z.object({
      organization_id: z.string(),
      requests: z.number().int(),
      full_load: z.boolean(),
      error: z.string().nullable(),
    }),
  ),
});

const ByKey = z.object({ issue_key: IssueKey });
/** One request's reads: `organization_id` narrows to one mapped organization (404 when the request is not in it); required for super admins. */
export const OneRequestQuery = z.object({ organization_id: NumericId.optional() });
/** What every read of the store may answer with. */
const READ_ERRORS = ['bad_request', 'forbidden', 'not_found', 'unavailable'] as const;

export const servicedeskSubjects = subjects({
  'svc.servicedesk.mappings.list': {
    retry: 'safe',
    summary: 'Organization mappings of the clients the caller holds servicedeskconfig:read on.',
    request: MappingListQuery,
    reply: Paged(Mapping),
    errors: ['forbidden', 'not_found', 'unavailable'],
  },
  'svc.servicedesk.mappings.create': {
    summary:
      'Ties a client to a tracker organization, its service desks, projects and labels (servicedeskconfig:write on the client).',
    request: CreateMappingBody,
    reply: Mapping,
    errors: ['bad_request', 'forbidden', 'not_found', 'conflict', 'unavailable', 'bad_gateway', 'too_many_requests'],
  },
  'svc.servicedesk.mappings.update': {
    summary:
      'Replaces a mapping’s organization, service desks, projects and labels; its client never changes (servicedeskconfig:write).',
    request: UpdateMappingBody.extend({ id: z.uuid() }),
    reply: Mapping,
    errors: ['bad_request', 'forbidden', 'not_found', 'conflict', 'unavailable', 'bad_gateway', 'too_many_requests'],
  },
  'svc.servicedesk.mappings.delete': {
    summary: 'Removes a mapping (servicedeskconfig:delete).',
    request: z.object({ id: z.uuid() }),
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'unavailable'],
  },
  'svc.servicedesk.organizations.list': {
    retry: 'safe',
    summary: 'The organization mappings of the caller’s client scope (servicedesk:read).',
    request: OrganizationListQuery,
    reply: Paged(Mapping),
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.sync.run': {
    summary: 'Runs the read-store sync now and waits for it (servicedeskconfig:write on any client).',
    request: z.object({}),
    reply: SyncReport,
    errors: ['forbidden', 'unavailable', 'conflict'],
  },
  'svc.servicedesk.tickets.list': {
    retry: 'safe',
    summary:
      'Requests of the caller’s organizations from the read store, filtered, sorted, paginated; pending writes merged in.',
    request: TicketListQuery,
    reply: Paged(Ticket),
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.tickets.get': {
    retry: 'safe',
    summary: 'One request with its status history, SLA and delivery figures (read store).',
    request: ByKey.extend(OneRequestQuery.shape),
    reply: TicketDetail,
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.kanban': {
    retry: 'safe',
    summary: 'Requests grouped by status category and status, at most 500 (read store).',
    request: TicketFilters,
    reply: KanbanBoard,
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.metrics.sla': {
    retry: 'safe',
    summary: 'SLA figures over requests created in a range.',
    request: MetricsRangeQuery,
    reply: SlaMetrics,
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.metrics.delivery': {
    retry: 'safe',
    summary: 'Cycle time, throughput and on-time figures over requests resolved in a range.',
    request: MetricsRangeQuery,
    reply: DeliveryMetrics,
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.metrics.summary': {
    retry: 'safe',
    summary: 'Open and resolved counts, MTTA, MTTR, SLA compliance, throughput.',
    request: MetricsScopeQuery,
    reply: SummaryMetrics,
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.export': {
    retry: 'safe',
    summary: 'The filtered requests as CSV, at most 10,000 rows, formula-like cells neutralized.',
    request: TicketFilters,
    reply: CsvExport,
    errors: [...READ_ERRORS],
  },
  'svc.servicedesk.actions.list': {
    retry: 'safe',
    summary: 'The writes made through this service on one request, newest first.',
    request: ByKey.extend(Paging).extend(OneRequestQuery.shape),
    reply: Paged(Action),
    errors: [...READ_ERRORS],
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Events

/**
 * A synced request's SLA cycle changed: published by the sync when a request's first-response or resolution cycle
 * differs from the stored copy (a new cycle, a new breach time, paused, breached, met). Notifications read it to tell
 * people of a breach, or of one about to happen (docs/api/notifications.md).
 */
export const SlaChanged = z.object({
  issue_key: IssueKey,
  summary: z.string(),
  /** The clients whose organization mappings cover the request (none: no client sees it, nothing is told). */
  client_ids: z.array(z.uuid()),
  metric: z.enum(['first_response', 'resolution']),
  /**
   * The cycle now: ongoing (running within its goal), paused (breached or not), breached (running past its goal, or
   * completed late: then breach_at is null) or met (completed in time).
   */
  state: z.enum(['ongoing', 'paused', 'breached', 'met']),
  /** When a running cycle breaches; null once it is paused or completed, or when the tracker gives no goal. */
  breach_at: Timestamp.nullable(),
  /** When the sync saw the change (the request's own update time). */
  at: Timestamp,
});
export type SlaChanged = z.infer<typeof SlaChanged>;
