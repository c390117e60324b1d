import { z } from 'zod';
import { DomainError } from '../../../contracts/errors.ts';
import type { TrackerCall, TrackerClient } from './client.ts';

/**
 * The subset of the tracker's REST APIs the service desk uses, with the shapes it reads (lenient: unknown members are
 * kept or ignored, never refused). Jira Service Management Cloud: `/rest/servicedeskapi/...` (requests, comments,
 * transitions, approvals, attachments, request types, organizations, SLA) and the platform's `/rest/api/3/...`
 * (enhanced JQL search with the changelog, issues and their links, fields, statuses, the account's time zone).
 */

const Str = z.union([z.string(), z.number()]).transform(String);
const User = z
  .object({ accountId: z.string().optional(), displayName: z.string().optional(), emailAddress: z.string().optional() })
  .nullable()
  .optional();
export type TrackerUser = z.infer<typeof User>;
/** `{iso8601, jira, friendly, epochMillis}` */
const DateDto = z.object({ iso8601: z.string().optional(), epochMillis: z.number().optional() }).nullable().optional();
const Millis = z.object({ millis: z.number() }).nullable().optional();

export const SlaCycleDto = z.object({
  startTime: DateDto,
  stopTime: DateDto,
  breachTime: DateDto,
  breached: z.boolean().default(false),
  paused: z.boolean().optional(),
  goalDuration: Millis,
  elapsedTime: Millis,
});
export const SlaDto = z.object({
  id: Str.optional(),
  name: z.string(),
  completedCycles: z.array(SlaCycleDto).default([]),
  ongoingCycle: SlaCycleDto.nullable().optional(),
});
export type SlaDto = z.infer<typeof SlaDto>;

const IssueLink = z.object({
  type: z
    .object({ name: z.string().optional(), inward: z.string().optional(), outward: z.string().optional() })
    .optional(),
  inwardIssue: z.object({ key: z.string() }).optional(),
  outwardIssue: z.object({ key: z.string() }).optional(),
});
const Named = z.object({ id: Str.optional(), name: z.string() }).nullable().optional();

export const IssueFields = z
  .object({
    summary: z.string().nullable().optional(),
    status: z
      .object({ id: Str.optional(), name: z.string(), statusCategory: z.object({ key: z.string() }).optional() })
      .optional(),
    priority: Named,
    issuetype: Named,
    assignee: User,
    reporter: User,
    created: z.string().optional(),
    updated: z.string().optional(),
    resolutiondate: z.string().nullable().optional(),
    duedate: z.string().nullable().optional(),
    labels: z.array(z.string()).nullable().optional(),
    project: z.object({ key: z.string() }).optional(),
    issuelinks: z.array(IssueLink).nullable().optional(),
  })
  .catchall(z.unknown());
export type IssueFields = z.infer<typeof IssueFields>;

/** The Organizations field's value (its id varies between sites: tracker/site.ts). */
const OrganizationsValue = z
  .array(z.object({ id: Str, name: z.string().optional() }))
  .nullable()
  .optional();

/** The organization ids of an issue's Organizations field; none when absent or unreadable. */
export function organizationIdsOf(fields: IssueFields, fieldId: string): string[] {
  const r = OrganizationsValue.safeParse(fields[fieldId]);
  return r.success ? (r.data ?? []).map((o) => o.id) : [];
}

const HistoryItem = z.object({
  field: z.string(),
  fieldId: z.string().optional(),
  from: z.string().nullable().optional(),
  fromString: z.string().nullable().optional(),
  to: z.string().nullable().optional(),
  toString: z.string().nullable().optional(),
});
export const History = z.object({ id: Str, created: z.string(), items: z.array(HistoryItem) });
export type History = z.infer<typeof History>;

export const Issue = z.object({
  id: Str,
  key: z.string(),
  fields: IssueFields,
  changelog: z
    .object({
      startAt: z.number().optional(),
      maxResults: z.number().optional(),
      total: z.number().optional(),
      histories: z.array(History),
    })
    .optional(),
});
export type Issue = z.infer<typeof Issue>;

const SearchPage = z.object({
  issues: z.array(Issue),
  nextPageToken: z.string().nullable().optional(),
  isLast: z.boolean().optional(),
});
const ChangelogPage = z.object({
  startAt: z.number(),
  maxResults: z.number(),
  total: z.number(),
  isLast: z.boolean().optional(),
  values: z.array(History),
});
const FieldDto = z.object({
  id: z.string(),
  name: z.string(),
  schema: z.object({ custom: z.string().optional() }).nullable().optional(),
});
export type TrackerField = z.output<typeof FieldDto>;
const StatusDto = z.object({ id: Str, name: z.string(), statusCategory: z.object({ key: z.string() }) });

const Paged = <T extends z.ZodType>(item: T) =>
  z.object({
    start: z.number().default(0),
    limit: z.number().default(0),
    size: z.number().default(0),
    isLastPage: z.boolean().default(true),
    values: z.array(item),
  });

export const CommentDto = z.object({
  id: Str,
  body: z.string().default(''),
  public: z.boolean().default(true),
  author: User,
  created: DateDto,
});
export const TransitionDto = z.object({ id: Str, name: z.string() });
export const ApprovalDto = z.object({
  id: Str,
  name: z.string().default(''),
  finalDecision: z.string().default('pending'),
  canAnswerApproval: z.boolean().default(false),
  approvers: z.array(z.object({ approver: User, approverDecision: z.string().default('pending') })).default([]),
  createdDate: DateDto,
  completedDate: DateDto,
});
export const AttachmentDto = z.object({
  filename: z.string(),
  size: z.number().nullable().optional(),
  mimeType: z.string().nullable().optional(),
  created: DateDto,
  author: User,
});
export const CustomerRequestDto = z.object({
  issueId: Str,
  issueKey: z.string(),
  requestTypeId: Str.optional(),
  serviceDeskId: Str.optional(),
  createdDate: DateDto,
  reporter: User,
  currentStatus: z
    .object({ status: z.string(), statusCategory: z.string().optional(), statusDate: DateDto })
    .optional(),
});
const RequestTypeFieldDto = z.object({
  fieldId: z.string(),
  name: z.string().default(''),
  description: z.string().default(''),
  required: z.boolean().default(false),
  visible: z.boolean().default(true),
  defaultValues: z.array(z.object({ value: Str, label: z.string().default('') })).default([]),
  validValues: z.array(z.object({ value: Str, label: z.string().default('') })).default([]),
  jiraSchema: z
    .object({ type: z.string().optional(), system: z.string().optional(), custom: z.string().optional() })
    .nullable()
    .optional(),
});
export const RequestTypeFieldsDto = z.object({
  requestTypeFields: z.array(RequestTypeFieldDto).default([]),
  canRaiseOnBehalfOf: z.boolean().default(false),
  canAddRequestParticipants: z.boolean().default(false),
});

/** A parse of a tracker answer; a shape we cannot read is the tracker's fault (502), not ours (500). */
function parse<T extends z.ZodType>(schema: T, body: unknown, what: string): z.output<T> {
  const r = schema.safeParse(body);
  if (!r.success)
    throw new DomainError('bad_gateway', `the issue tracker's answer for ${what} has an unexpected shape`);
  return r.data;
}

export type CallOpts = Pick<TrackerCall, 'deadline' | 'signal' | 'on429'>;

/** Typed calls over the client. */
export class TrackerApi {
  readonly client: TrackerClient;
  constructor(client: TrackerClient) {
    this.client = client;
  }

  private async get<T extends z.ZodType>(
    schema: T,
    path: string,
    what: string,
    opts: CallOpts,
    query?: TrackerCall['query'],
  ): Promise<z.output<T>> {
    const res = await this.client.call({
      method: 'GET',
      path,
      idempotent: true,
      what,
      ...opts,
      ...(query ? { query } : {}),
    });
    return parse(schema, res.body, what);
  }

  // ---- platform (/rest/api/3) --------------------------------------------------------------------------------

  async myself(opts: CallOpts = {}): Promise<{ timeZone?: string | undefined }> {
    return this.get(z.object({ timeZone: z.string().optional() }), '/rest/api/3/myself', 'the service account', opts);
  }

  async fields(opts: CallOpts = {}): Promise<z.output<typeof FieldDto>[]> {
    return this.get(z.array(FieldDto), '/rest/api/3/field', 'fields', opts);
  }

  async statuses(opts: CallOpts = {}): Promise<z.output<typeof StatusDto>[]> {
    return this.get(z.array(StatusDto), '/rest/api/3/status', 'statuses', opts);
  }

  /** One page of the enhanced JQL search (`/rest/api/3/search/jql`), each issue with its changelog. */
  async search(
    jql: string,
    fields: string[],
    nextPageToken: string | undefined,
    maxResults: number,
    opts: CallOpts = {},
  ): Promise<z.output<typeof SearchPage>> {
    const res = await this.client.call({
      method: 'POST',
      path: '/rest/api/3/search/jql',
      // A search changes nothing: safe to repeat.
      idempotent: true,
      what: 'the search',
      json: { jql, fields, expand: 'changelog', maxResults, ...(nextPageToken ? { nextPageToken } : {}) },
      ...opts,
    });
    return parse(SearchPage, res.body, 'the search');
  }

  async changelog(key: string, startAt: number, opts: CallOpts = {}): Promise<z.output<typeof ChangelogPage>> {
    return this.get(ChangelogPage, `/rest/api/3/issue/${encodeURIComponent(key)}/changelog`, `issue ${key}`, opts, {
      startAt,
      maxResults: 100,
    });
  }

  async issue(key: string, fields: string[], opts: CallOpts = {}): Promise<Issue> {
    return this.get(Issue, `/rest/api/3/issue/${encodeURIComponent(key)}`, `issue ${key}`, opts, {
      fields: fields.join(','),
    });
  }

  // ---- service desk (/rest/servicedeskapi) -------------------------------------------------------------------

  async organization(id: string, opts: CallOpts = {}): Promise<{ id: string; name: string }> {
    return this.get(
      z.object({ id: Str, name: z.string() }),
      `/rest/servicedeskapi/organization/${id}`,
      `organization ${id}`,
      opts,
    );
  }

  async serviceDesk(id: string, opts: CallOpts = {}): Promise<{ id: string; projectKey: string }> {
    return this.get(
      z.object({ id: Str, projectKey: z.string() }),
      `/rest/servicedeskapi/servicedesk/${id}`,
      `service desk ${id}`,
      opts,
    );
  }

  async request(key: string, opts: CallOpts = {}): Promise<z.output<typeof CustomerRequestDto>> {
    return this.get(
      CustomerRequestDto,
      `/rest/servicedeskapi/request/${encodeURIComponent(key)}`,
      `request ${key}`,
      opts,
    );
  }

  async createRequest(
    body: Record<string, unknown>,
    opts: CallOpts = {},
  ): Promise<z.output<typeof CustomerRequestDto>> {
    const res = await this.client.call({
      method: 'POST',
      path: '/rest/servicedeskapi/request',
      json: body,
      what: 'the service desk or request type',
      ...opts,
    });
    return parse(CustomerRequestDto, res.body, 'the new request');
  }

  async sla(key: string, opts: CallOpts = {}): Promise<SlaDto[]> {
    const page = await this.get(
      Paged(SlaDto),
      `/rest/servicedeskapi/request/${encodeURIComponent(key)}/sla`,
      `request ${key}`,
      opts,
      { limit: 50 },
    );
    return page.values;
  }

  async comments(
    key: string,
    start: number,
    limit: number,
    opts: CallOpts = {},
  ): Promise<z.output<ReturnType<typeof Paged<typeof CommentDto>>>> {
    return this.get(
      Paged(CommentDto),
      `/rest/servicedeskapi/request/${encodeURIComponent(key)}/comment`,
      `request ${key}`,
      opts,
      { start, limit },
    );
  }

  async addComment(
    key: string,
    body: string,
    isPublic: boolean,
    opts: CallOpts = {},
  ): Promise<z.output<typeof CommentDto>> {
    const res = await this.client.call({
      method: 'POST',
      path: `/rest/servicedeskapi/request/${encodeURIComponent(key)}/comment`,
      json: { body, public: isPublic },
      what: `request ${key}`,
      ...opts,
    });
    return parse(CommentDto, res.body, 'the new comment');
  }

  async transitions(key: string, opts: CallOpts = {}): Promise<z.output<typeof TransitionDto>[]> {
    const page = await this.get(
      Paged(TransitionDto),
      `/rest/servicedeskapi/request/${encodeURIComponent(key)}/transition`,
      `request ${key}`,
      opts,
      { limit: 100 },
    );
    return page.values;
  }

  async transition(key: string, id: string, comment: string | undefined, opts: CallOpts = {}): Promise<void> {
    await this.client.call({
      method: 'POST',
      path: `/rest/servicedeskapi/request/${encodeURIComponent(key)}/transition`,
      json: { id, ...(comment ? { additionalComment: { body: comment } } : {}) },
      what: `request ${key}`,
      ...opts,
    });
  }

  async approvals(key: string, opts: CallOpts = {}): Promise<z.output<typeof ApprovalDto>[]> {
    const page = await this.get(
      Paged(ApprovalDto),
      `/rest/servicedeskapi/request/${encodeURIComponent(key)}/approval`,
      `request ${key}`,
      opts,
      { limit: 100 },
    );
    return page.values;
  }

  async decide(
    key: string,
    approvalId: string,
    decision: 'approve' | 'decline',
    opts: CallOpts = {},
  ): Promise<z.output<typeof ApprovalDto>> {
    const res = await this.client.call({
      method: 'POST',
      path: `/rest/servicedeskapi/request/${encodeURIComponent(key)}/approval/${approvalId}`,
      json: { decision },
      what: `approval ${approvalId} of request ${key}`,
      ...opts,
    });
    return parse(ApprovalDto, res.body, 'the approval');
  }

  async attachments(key: string, opts: CallOpts = {}): Promise<z.output<typeof AttachmentDto>[]> {
    const page = await this.get(
      Paged(AttachmentDto),
      `/rest/servicedeskapi/request/${encodeURIComponent(key)}/attachment`,
      `request ${key}`,
      opts,
      { limit: 100 },
    );
    return page.values;
  }

  /** The temporary-file step: the file goes to the service desk first and comes back as a temporary attachment id. */
  async attachTemporaryFile(
    serviceDeskId: string,
    body: ReadableStream<Uint8Array>,
    contentType: string,
    opts: CallOpts = {},
  ): Promise<string[]> {
    const res = await this.client.call({
      method: 'POST',
      path: `/rest/servicedeskapi/servicedesk/${serviceDeskId}/attachTemporaryFile`,
      raw: { body, contentType },
      // The tracker's XSRF check for multipart posts, and the opt-in its docs ask for on this method.
      headers: { 'x-atlassian-token': 'no-check', 'x-experimentalapi': 'opt-in' },
      what: `service desk ${serviceDeskId}`,
      ...opts,
    });
    const out = parse(
      z.object({
        temporaryAttachments: z.array(z.object({ temporaryAttachmentId: z.string(), fileName: z.string().optional() })),
      }),
      res.body,
      'the upload',
    );
    return out.temporaryAttachments.map((t) => t.temporaryAttachmentId);
  }

  async attach(
    key: string,
    temporaryAttachmentIds: string[],
    isPublic: boolean,
    opts: CallOpts = {},
  ): Promise<z.output<typeof AttachmentDto>[]> {
    const res = await this.client.call({
      method: 'POST',
      path: `/rest/servicedeskapi/request/${encodeURIComponent(key)}/attachment`,
      json: { temporaryAttachmentIds, public: isPublic },
      what: `request ${key}`,
      ...opts,
    });
    const out = parse(z.object({ attachments: Paged(AttachmentDto) }), res.body, 'the attachment');
    return out.attachments.values;
  }

  async requestTypeFields(
    serviceDeskId: string,
    requestTypeId: string,
    opts: CallOpts = {},
  ): Promise<z.output<typeof RequestTypeFieldsDto>> {
    return this.get(
      RequestTypeFieldsDto,
      `/rest/servicedeskapi/servicedesk/${serviceDeskId}/requesttype/${requestTypeId}/field`,
      `request type ${requestTypeId} of service desk ${serviceDeskId}`,
      opts,
    );
  }
}

/** The tracker's dates: `2026-01-02T03:04:05.000+0000` (platform), `{iso8601, epochMillis}` (service desk). */
export function trackerDate(value: string | null | undefined): Date | null {
  if (!value) return null;
  const normalized = value.replace(/([+-]\d\d)(\d\d)$/, '$1:$2');
  const ms = Date.parse(normalized);
  return Number.isNaN(ms) ? null : new Date(ms);
}

export function dtoDate(
  d: { iso8601?: string | undefined; epochMillis?: number | undefined } | null | undefined,
): Date | null {
  if (!d) return null;
  // An epoch the Date cannot hold is read as absent (toISOString on it would throw).
  const at = typeof d.epochMillis === 'number' ? new Date(d.epochMillis) : null;
  if (at && !Number.isNaN(at.getTime())) return at;
  return trackerDate(d.iso8601);
}
