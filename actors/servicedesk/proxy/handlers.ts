import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { requirePermission } from '../../../contracts/access.ts';
import {
  RequestTypeFields,
  type Approval,
  type Attachment,
  type Comment,
} from '../../../contracts/domains/servicedesk-proxy.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { siteOf, trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { mappingsFor } from '../scope.ts';
import { asCategory } from '../sync/normalize.ts';
import { dtoDate, type ApprovalDto, type AttachmentDto, type CommentDto, type TrackerUser } from '../tracker/api.ts';
import { logAction, resolveTarget } from './target.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

const person = (u: TrackerUser): z.output<typeof Comment>['author'] =>
  u ? { account_id: u.accountId ?? null, display_name: u.displayName ?? null, email: u.emailAddress ?? null } : null;
const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
};
const isoOf = (d: Parameters<typeof dtoDate>[0]): string | null => dtoDate(d)?.toISOString() ?? null;

export const commentOut = (c: z.output<typeof CommentDto>): z.output<typeof Comment> => ({
  id: c.id,
  body: c.body,
  public: c.public,
  author: person(c.author),
  created: isoOf(c.created),
});
export const approvalOut = (a: z.output<typeof ApprovalDto>): z.output<typeof Approval> => ({
  id: a.id,
  name: a.name,
  final_decision: a.finalDecision,
  can_answer: a.canAnswerApproval,
  approvers: a.approvers.map((x) => ({
    display_name: x.approver?.displayName ?? null,
    email: x.approver?.emailAddress ?? null,
    decision: x.approverDecision,
  })),
  created: isoOf(a.createdDate),
  completed: isoOf(a.completedDate),
});
export const attachmentOut = (a: z.output<typeof AttachmentDto>): z.output<typeof Attachment> => ({
  filename: a.filename,
  size: a.size ?? null,
  mime_type: a.mimeType ?? null,
  created: isoOf(a.created),
  author: person(a.author),
});

const READ = 'servicedesk:read';
const WRITE = 'servicedesk:write';

export function proxyHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.comments.list': async ({ issue_key, start, limit }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, READ, { deadline, signal });
      const page = await trackerOf(deps).comments(t.issue_key, start, limit, { deadline, signal });
      return {
        items: page.values.map(commentOut),
        start: page.start,
        limit: page.limit,
        size: page.size,
        is_last_page: page.isLastPage,
      };
    },

    'svc.servicedesk.comments.create': async ({ issue_key, body, public: isPublic }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, WRITE, { deadline, signal });
      const c = await trackerOf(deps).addComment(t.issue_key, body, isPublic, { deadline, signal });
      await logAction(deps, ctx, t.issue_key, t.mapping, 'comment', {
        comment_id: c.id,
        public: c.public,
        ...(t.asked !== t.issue_key ? { via: t.asked } : {}),
      });
      return commentOut(c);
    },

    'svc.servicedesk.transitions.list': async ({ issue_key }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, READ, { deadline, signal });
      return {
        items: (await trackerOf(deps).transitions(t.issue_key, { deadline, signal })).map((x) => ({
          id: x.id,
          name: x.name,
        })),
      };
    },

    'svc.servicedesk.transitions.execute': async ({ issue_key, id, comment }, { ctx, deadline, signal }) => {
      const api = trackerOf(deps);
      const t = await resolveTarget(deps, ctx, issue_key, WRITE, { deadline, signal });
      // Only a transition the request offers right now: its id is taken from the request's own list.
      const offered = await api.transitions(t.issue_key, { deadline, signal });
      const chosen = offered.find((x) => x.id === id);
      if (!chosen)
        throw new DomainError(
          'bad_request',
          `transition ${id} is not available for request ${t.issue_key}; take an id from GET .../transitions`,
        );
      await api.transition(t.issue_key, id, comment, { deadline, signal });
      // The status the request has now, shown until the sync stores it. Unreadable: no override at all (a transition's
      // name is not a status, and a guess could be wrong); the stored status shows until the sync catches up.
      const now = await api.request(t.issue_key, { deadline, signal }).catch((err: unknown) => {
        deps.log.warn(
          { err, issue_key: t.issue_key },
          'the request could not be read after its transition; its new status shows once the sync stores it',
        );
        return undefined;
      });
      const status = now?.currentStatus?.status ?? null;
      const category = status === null ? null : asCategory(now?.currentStatus?.statusCategory?.toLowerCase());
      if (status !== null) {
        const at = dtoDate(now?.currentStatus?.statusDate) ?? new Date();
        await sql(
          deps.orm.em.fork(),
          `INSERT INTO sd_pending (id, issue_key, kind, organization_id, status, status_category, effective_at) VALUES (?, ?, 'transition', ?, ?, ?, ?)`,
          [randomUUID(), t.issue_key, t.mapping.organization_id, status, category, at.toISOString()],
        );
        await deps.memo.bump();
      } else if (now)
        deps.log.warn(
          { issue_key: t.issue_key },
          'the request read after its transition carried no status; its new status shows once the sync stores it',
        );
      await logAction(deps, ctx, t.issue_key, t.mapping, 'transition', {
        transition_id: id,
        transition: chosen.name,
        status,
        ...(comment ? { with_comment: true } : {}),
        ...(t.asked !== t.issue_key ? { via: t.asked } : {}),
      });
      return { issue_key: t.issue_key, transition_id: id, status, status_category: category };
    },

    'svc.servicedesk.approvals.list': async ({ issue_key }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, READ, { deadline, signal });
      return { items: (await trackerOf(deps).approvals(t.issue_key, { deadline, signal })).map(approvalOut) };
    },

    'svc.servicedesk.approvals.decide': async ({ issue_key, approval_id, decision }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, WRITE, { deadline, signal });
      const a = await trackerOf(deps).decide(t.issue_key, approval_id, decision, { deadline, signal });
      await logAction(deps, ctx, t.issue_key, t.mapping, 'approval', {
        approval_id,
        decision,
        ...(t.asked !== t.issue_key ? { via: t.asked } : {}),
      });
      return approvalOut(a);
    },

    'svc.servicedesk.attachments.list': async ({ issue_key }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, READ, { deadline, signal });
      return { items: (await trackerOf(deps).attachments(t.issue_key, { deadline, signal })).map(attachmentOut) };
    },

    'svc.servicedesk.requests.create': async (body, { ctx, deadline, signal }) => {
      requirePermission(ctx, WRITE);
      const em = deps.orm.em.fork();
      const writable = (await mappingsFor(em, ctx, WRITE, { organization_id: body.organization_id })).filter((m) =>
        m.service_desk_ids.includes(body.service_desk_id),
      );
      if (writable.length === 0) {
        const readable = (
          await mappingsFor(em, ctx, READ, { organization_id: body.organization_id }).catch(() => [])
        ).filter((m) => m.service_desk_ids.includes(body.service_desk_id));
        if (readable.length > 0)
          throw new DomainError(
            'forbidden',
            `missing permission ${WRITE} on the client of service desk ${body.service_desk_id}`,
          );
        throw new DomainError(
          'bad_request',
          `service_desk_id ${body.service_desk_id} does not belong to any of your organization mappings`,
        );
      }
      const orgs = [...new Set(writable.map((m) => m.organization_id))];
      if (orgs.length > 1)
        throw new DomainError(
          'bad_request',
          `service desk ${body.service_desk_id} is mapped for several organizations (${orgs.join(', ')}): add organization_id`,
        );
      const mapping = writable[0]!;
      const labels = [...new Set(writable.flatMap((m) => m.labels))];
      const { organizations } = await siteOf(deps).get({ deadline, signal });
      // The contract refuses customfield_10002; a site keeping the Organizations field elsewhere is refused the same way.
      if (organizations in body.request_field_values)
        throw new DomainError(
          'bad_request',
          `request_field_values.${organizations} is the Organizations field: the service sets it`,
        );
      const created = await trackerOf(deps).createRequest(
        {
          serviceDeskId: body.service_desk_id,
          requestTypeId: body.request_type_id,
          // The organization is ours to set (the site's Organizations field), and a label-scoped mapping's labels.
          requestFieldValues: {
            ...body.request_field_values,
            [organizations]: [Number(mapping.organization_id)],
            ...(labels.length > 0 ? { labels } : {}),
          },
          ...(body.raiseOnBehalfOf ? { raiseOnBehalfOf: body.raiseOnBehalfOf } : {}),
        },
        { deadline, signal },
      );
      const createdAt = dtoDate(created.createdDate) ?? new Date();
      const callerEmail = ctx.principal.kind === 'user' ? ctx.principal.email : null;
      const projectKey = created.issueKey.split('-')[0] ?? '';
      await sql(
        em,
        `INSERT INTO sd_pending (id, issue_key, kind, organization_id, status, status_category, effective_at, fields) VALUES (?, ?, 'create', ?, 'PENDING', 'new', ?, ?::jsonb)`,
        [
          randomUUID(),
          created.issueKey,
          mapping.organization_id,
          createdAt.toISOString(),
          pgJson({
            issue_id: created.issueId,
            project_key: projectKey,
            issue_number: Number(created.issueKey.split('-')[1] ?? 0),
            service_desk_id: body.service_desk_id,
            request_type_id: body.request_type_id,
            summary: body.request_field_values.summary,
            reporter_name: created.reporter?.displayName ?? null,
            reporter_email: (created.reporter?.emailAddress ?? callerEmail)?.toLowerCase() ?? null,
            labels,
          }),
        ],
      );
      await deps.memo.bump();
      await logAction(deps, ctx, created.issueKey, mapping, 'create', {
        service_desk_id: body.service_desk_id,
        request_type_id: body.request_type_id,
        organization_id: mapping.organization_id,
        summary: body.request_field_values.summary,
        ...(body.raiseOnBehalfOf ? { raise_on_behalf_of: body.raiseOnBehalfOf } : {}),
      });
      return {
        issue_key: created.issueKey,
        issue_id: created.issueId,
        service_desk_id: body.service_desk_id,
        request_type_id: body.request_type_id,
        organization_id: mapping.organization_id,
        status: 'PENDING',
        created: createdAt.toISOString(),
      };
    },

    'svc.servicedesk.request_types.fields': async ({ service_desk_id, request_type_id }, { ctx, deadline, signal }) => {
      const mappings = await mappingsFor(deps.orm.em.fork(), ctx, READ, {});
      if (!mappings.some((m) => m.service_desk_ids.includes(service_desk_id)))
        throw new DomainError('not_found', `service desk ${service_desk_id} is not in your organization mappings`);
      const key = `sd:fields:${service_desk_id}:${request_type_id}`;
      // A cache that cannot be reached is a miss, never a failure.
      const cached = await deps.kv.get(key).catch(() => null);
      if (cached) {
        // An entry that does not parse (truncated, an older shape) is a miss too.
        const parsed = RequestTypeFields.safeParse(parseJson(cached));
        if (parsed.success) return parsed.data;
      }
      const dto = await trackerOf(deps).requestTypeFields(service_desk_id, request_type_id, { deadline, signal });
      const out: z.output<typeof RequestTypeFields> = {
        fields: dto.requestTypeFields.map((f) => ({
          field_id: f.fieldId,
          name: f.name,
          description: f.description,
          required: f.required,
          visible: f.visible,
          default_values: f.defaultValues,
          valid_values: f.validValues,
          schema: f.jiraSchema
            ? {
                type: f.jiraSchema.type ?? null,
                system: f.jiraSchema.system ?? null,
                custom: f.jiraSchema.custom ?? null,
              }
            : null,
        })),
        can_raise_on_behalf_of: dto.canRaiseOnBehalfOf,
        can_add_request_participants: dto.canAddRequestParticipants,
      };
      await deps.kv
        .set(key, JSON.stringify(out), { ttlMs: deps.config.SVC_SD_FIELD_CACHE_TTL * 1000 })
        .catch(() => undefined);
      return out;
    },
  };
}
