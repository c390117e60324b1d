import { z } from 'zod';
import { JsonValue } from '../fields.ts';
import { subjects } from '../subject.ts';
import { IssueKey, NumericId } from './servicedesk.ts';

/**
 * The service desk's proxy to the issue tracker (docs/api/service-desk.md#proxy-routes): ownership of
 * the request is checked before anything is forwarded, an engineering key is resolved to its support request, and the
 * tracker's answers come back in our own shapes (never its raw bodies).
 */

const Timestamp = z.iso.datetime();
/** The caller's own field names are snake_case; the tracker's pass-through fields keep theirs. */
const Person = z
  .object({ account_id: z.string().nullable(), display_name: z.string().nullable(), email: z.string().nullable() })
  .nullable();
const Text = z.string().trim().min(1, 'must not be empty').max(32_767);

export const Comment = z.object({
  id: z.string(),
  body: z.string(),
  public: z.boolean(),
  author: Person,
  created: Timestamp.nullable(),
});
export const CommentPage = z.object({
  items: z.array(Comment),
  start: z.number().int(),
  limit: z.number().int(),
  size: z.number().int(),
  is_last_page: z.boolean(),
});
export const Transition = z.object({ id: z.string(), name: z.string() });
export const Approval = z.object({
  id: z.string(),
  name: z.string(),
  final_decision: z.string(),
  can_answer: z.boolean(),
  approvers: z.array(
    z.object({ display_name: z.string().nullable(), email: z.string().nullable(), decision: z.string() }),
  ),
  created: Timestamp.nullable(),
  completed: Timestamp.nullable(),
});
export const Attachment = z.object({
  filename: z.string(),
  size: z.number().int().nullable(),
  mime_type: z.string().nullable(),
  created: Timestamp.nullable(),
  author: Person,
});

export const CommentListQuery = z.object({
  start: z.coerce.number().int().min(0).max(100_000).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});
export const CreateCommentBody = z.object({ body: Text, public: z.boolean().default(true) });
export const TransitionBody = z.object({ id: NumericId, comment: Text.optional() });
export const ApprovalBody = z.object({ decision: z.enum(['approve', 'decline']) });

/** Fields the service sets itself: the organization (customfield_10002) and the mapping's labels. */
const RESERVED_FIELDS = new Set(['customfield_10002', 'labels']);
const FIELD_ID = /^(?:[a-z][A-Za-z0-9]{0,63}|customfield_\d{1,10})$/;

export const RequestFieldValues = z
  .object({
    summary: z.string().trim().min(1, 'must not be empty').max(255),
    description: z.string().max(32_767).optional(),
    priority: z.object({ id: NumericId }).optional(),
  })
  .catchall(JsonValue)
  .superRefine((values, ctx) => {
    for (const key of Object.keys(values)) {
      if (RESERVED_FIELDS.has(key))
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: 'is set by the service (the organization and labels of the mapping)',
        });
      else if (!FIELD_ID.test(key))
        ctx.addIssue({ code: 'custom', path: [key], message: 'is not a field id of the tracker' });
    }
  });

export const CreateRequestBody = z.object({
  service_desk_id: NumericId,
  request_type_id: NumericId,
  request_field_values: RequestFieldValues,
  /** The customer the request is raised for (the tracker's account id or e-mail), passed through. */
  raiseOnBehalfOf: z.string().trim().min(1).max(128).optional(),
  /** Which mapped organization the request belongs to, when the service desk is mapped for several. */
  organization_id: NumericId.optional(),
});

export const CreatedRequest = z.object({
  issue_key: z.string(),
  issue_id: z.string(),
  service_desk_id: z.string(),
  request_type_id: z.string(),
  organization_id: z.string(),
  status: z.string(),
  created: Timestamp,
});

export const RequestTypeFields = z.object({
  fields: z.array(
    z.object({
      field_id: z.string(),
      name: z.string(),
      description: z.string(),
      required: z.boolean(),
      visible: z.boolean(),
      default_values: z.array(z.object({ value: z.string(), label: z.string() })),
      valid_values: z.array(z.object({ value: z.string(), label: z.string() })),
      schema: z
        .object({ type: z.string().nullable(), system: z.string().nullable(), custom: z.string().nullable() })
        .nullable(),
    }),
  ),
  can_raise_on_behalf_of: z.boolean(),
  can_add_request_participants: z.boolean(),
});
export const RequestTypeFieldsQuery = z.object({ service_desk_id: NumericId });

/** Where an upload waits between the gateway and the actor (a JetStream object store bucket; see attachments). */
export const UploadTicket = z.object({
  issue_key: z.string(),
  upload_id: z.uuid(),
  bucket: z.string(),
  max_bytes: z.number().int(),
});
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;

const ByKey = z.object({ issue_key: IssueKey });
const proxyErrors = [
  'bad_request',
  'forbidden',
  'not_found',
  'unavailable',
  'bad_gateway',
  'too_many_requests',
  'timeout',
] as const;

export const servicedeskProxySubjects = subjects({
  'svc.servicedesk.comments.list': {
    retry: 'safe',
    summary: 'Comments of a request, from the tracker (servicedesk:read).',
    request: ByKey.extend(CommentListQuery.shape),
    reply: CommentPage,
    errors: [...proxyErrors],
  },
  'svc.servicedesk.comments.create': {
    summary: 'Adds a public or internal comment (servicedesk:write).',
    request: ByKey.extend(CreateCommentBody.shape),
    reply: Comment,
    errors: [...proxyErrors],
  },
  'svc.servicedesk.transitions.list': {
    retry: 'safe',
    summary: 'Transitions the request allows now (servicedesk:read).',
    request: ByKey,
    reply: z.object({ items: z.array(Transition) }),
    errors: [...proxyErrors],
  },
  'svc.servicedesk.transitions.execute': {
    summary:
      'Executes a transition taken from the request’s own list (servicedesk:write); the new status shows until the sync catches up (status null: the tracker could not be read right after, the stored status shows until then).',
    request: ByKey.extend(TransitionBody.shape),
    reply: z.object({
      issue_key: z.string(),
      transition_id: z.string(),
      status: z.string().nullable(),
      status_category: z.enum(['new', 'indeterminate', 'done']).nullable(),
    }),
    errors: [...proxyErrors],
  },
  'svc.servicedesk.approvals.list': {
    retry: 'safe',
    summary: 'Approvals of a request (servicedesk:read).',
    request: ByKey,
    reply: z.object({ items: z.array(Approval) }),
    errors: [...proxyErrors],
  },
  'svc.servicedesk.approvals.decide': {
    summary: 'Approves or declines an approval (servicedesk:write).',
    request: ByKey.extend({ approval_id: NumericId, ...ApprovalBody.shape }),
    reply: Approval,
    errors: [...proxyErrors],
  },
  'svc.servicedesk.attachments.list': {
    retry: 'safe',
    summary: 'Attachments of a request (servicedesk:read).',
    request: ByKey,
    reply: z.object({ items: z.array(Attachment) }),
    errors: [...proxyErrors],
  },
  'svc.servicedesk.attachments.prepare': {
    summary: 'Checks ownership and write permission before an upload is read, and names where the gateway puts it.',
    request: ByKey,
    reply: UploadTicket,
    errors: [...proxyErrors],
  },
  'svc.servicedesk.attachments.add': {
    summary: 'Forwards an uploaded file through the tracker’s temporary-file step and attaches it (servicedesk:write).',
    request: ByKey.extend({
      upload_id: z.uuid(),
      filename: z.string().min(1).max(255),
      content_type: z.string().max(255),
      size: z.number().int().min(0).max(MAX_ATTACHMENT_BYTES),
      public: z.boolean().default(true),
    }),
    reply: z.object({ items: z.array(Attachment) }),
    errors: [...proxyErrors, 'request_too_large'],
  },
  'svc.servicedesk.requests.create': {
    summary:
      'Creates a request in a mapped service desk, its organization set through customfield_10002 (servicedesk:write); shown as PENDING until synced.',
    request: CreateRequestBody,
    reply: CreatedRequest,
    errors: [...proxyErrors],
  },
  'svc.servicedesk.request_types.fields': {
    retry: 'safe',
    summary: 'Form fields of a request type, cached for SVC_SD_FIELD_CACHE_TTL (servicedesk:read).',
    request: RequestTypeFieldsQuery.extend({ request_type_id: NumericId }),
    reply: RequestTypeFields,
    errors: [...proxyErrors],
  },
});
