import multipart from '@fastify/multipart';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { UploadStore } from '../../../actors/servicedesk/mod.ts';
import { IssueKey, NumericId } from '../../../contracts/domains/servicedesk.ts';
import {
  ApprovalBody,
  CommentListQuery,
  CreateCommentBody,
  CreateRequestBody,
  MAX_ATTACHMENT_BYTES,
  RequestTypeFieldsQuery,
  TransitionBody,
} from '../../../contracts/domains/servicedesk-proxy.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { GatewayApp } from '../../shared/app.ts';
import { routeGroup, securityOf, type GatewayDeps } from '../../shared/bridge.ts';
import { errorResponses } from '../../shared/openapi.ts';
import { deadlineOf, setDeadline, traceparentOf } from '../../shared/request-context.ts';

const BASE = '/api/v1/service-desk';
const KeyParams = z.object({ issueKey: IssueKey });

/**
 * The issue-tracker proxy (docs/api/service-desk.md#proxy-routes): ownership is checked by the
 * actors before anything is forwarded. Path formats are checked here (400): issue keys, numeric ids.
 */
export function registerServiceDeskProxyRoutes(app: GatewayApp, deps: GatewayDeps, uploads: UploadStore): void {
  const route = routeGroup(app, deps, { auth: 'authenticated', tags: ['service-desk'] });
  const key = (p: { issueKey: string }): { issue_key: string } => ({ issue_key: p.issueKey });

  route({
    method: 'GET',
    url: `${BASE}/tickets/:issueKey/comments`,
    subject: 'svc.servicedesk.comments.list',
    params: KeyParams,
    query: CommentListQuery,
    input: ({ params, query }) => ({ ...key(params), ...query }),
  });
  route({
    method: 'POST',
    url: `${BASE}/tickets/:issueKey/comments`,
    subject: 'svc.servicedesk.comments.create',
    params: KeyParams,
    body: CreateCommentBody,
    input: ({ params, body }) => ({ ...key(params), ...body }),
    status: 201,
  });
  route({
    method: 'GET',
    url: `${BASE}/tickets/:issueKey/transitions`,
    subject: 'svc.servicedesk.transitions.list',
    params: KeyParams,
    input: ({ params }) => key(params),
  });
  route({
    method: 'POST',
    url: `${BASE}/tickets/:issueKey/transition`,
    subject: 'svc.servicedesk.transitions.execute',
    params: KeyParams,
    body: TransitionBody,
    input: ({ params, body }) => ({ ...key(params), ...body }),
  });
  route({
    method: 'GET',
    url: `${BASE}/tickets/:issueKey/approvals`,
    subject: 'svc.servicedesk.approvals.list',
    params: KeyParams,
    input: ({ params }) => key(params),
  });
  route({
    method: 'POST',
    url: `${BASE}/tickets/:issueKey/approvals/:approvalId`,
    subject: 'svc.servicedesk.approvals.decide',
    params: KeyParams.extend({ approvalId: NumericId }),
    body: ApprovalBody,
    input: ({ params, body }) => ({ ...key(params), approval_id: params.approvalId, ...body }),
  });
  route({
    method: 'GET',
    url: `${BASE}/tickets/:issueKey/attachments`,
    subject: 'svc.servicedesk.attachments.list',
    params: KeyParams,
    input: ({ params }) => key(params),
  });
  route({
    method: 'POST',
    url: `${BASE}/tickets`,
    subject: 'svc.servicedesk.requests.create',
    body: CreateRequestBody,
    input: ({ body }) => body,
    status: 201,
  });
  route({
    method: 'GET',
    url: `${BASE}/request-types/:requestTypeId/fields`,
    subject: 'svc.servicedesk.request_types.fields',
    params: z.object({ requestTypeId: NumericId }),
    query: RequestTypeFieldsQuery,
    input: ({ params, query }) => ({ request_type_id: params.requestTypeId, ...query }),
  });
  registerUploadRoute(app, deps, uploads);
}

/** The first `n` UTF-16 units of `s`, without cutting a surrogate pair in two. */
const clip = (s: string, n: number): string => {
  const c = s.slice(0, n);
  return /[\uD800-\uDBFF]$/.test(c) ? c.slice(0, -1) : c;
};
const tooLarge = (): DomainError =>
  new DomainError('request_too_large', `attachments are at most ${MAX_ATTACHMENT_BYTES / (1024 * 1024)} MB`);

/**
 * POST tickets/{issueKey}/attachments, multipart with a `file` part (≤ 10 MB) and an optional `public` field. The
 * actors check ownership before a byte of the file is read; the file then streams into the upload store (the limit
 * enforced while it streams: one byte over is a 413 and nothing is forwarded), and the actors stream it on to the
 * tracker's temporary-file step.
 */
function registerUploadRoute(app: GatewayApp, deps: GatewayDeps, uploads: UploadStore): void {
  const prepare = deps.caller.catalogue['svc.servicedesk.attachments.prepare'];
  const add = deps.caller.catalogue['svc.servicedesk.attachments.add'];
  void app.register(async (scope) => {
    await scope.register(multipart, {
      limits: { fileSize: MAX_ATTACHMENT_BYTES, files: 1, fields: 5, fieldSize: 1024, parts: 8, headerPairs: 50 },
    });
    scope.route({
      method: 'POST',
      url: `${BASE}/tickets/:issueKey/attachments`,
      schema: {
        params: KeyParams,
        summary:
          'Attaches a file (multipart part `file`, at most 10 MB) through the tracker’s temporary-file step (servicedesk:write).',
        tags: ['service-desk'],
        consumes: ['multipart/form-data'],
        operationId: 'servicedesk_attachments_upload',
        security: securityOf('authenticated'),
        response: {
          201: z.object({ data: add.reply }),
          ...errorResponses({
            errors: [...new Set([...prepare.errors, ...add.errors])],
            auth: 'authenticated',
            limited: true,
            hasBody: true,
            idempotent: false,
          }),
        },
      },
      onRequest: async (req) => {
        setDeadline(req, Date.now() + deps.requestTimeoutMs);
        if (deps.guard) await deps.guard(req, 'api');
      },
      handler: async (req, reply) => {
        const ctx = await deps.auth.authenticate(req, 'authenticated');
        const { issueKey } = req.params as { issueKey: string };
        const opts = { deadline: deadlineOf(req, deps.requestTimeoutMs), traceparent: traceparentOf(req) };
        if (!req.isMultipart())
          throw new DomainError('bad_request', 'send the file as multipart/form-data with a part named file');
        const declared = Number(req.headers['content-length']);
        // Far over the limit: refused before reading (multipart framing adds far less than 64 KB).
        if (Number.isFinite(declared) && declared > MAX_ATTACHMENT_BYTES + 65_536) throw tooLarge();
        const ticket = await deps.caller.call(
          'svc.servicedesk.attachments.prepare',
          { issue_key: issueKey },
          ctx,
          opts,
        );
        let stored: { filename: string; contentType: string; size: number } | undefined;
        let isPublic = true;
        try {
          for await (const part of req.parts()) {
            if (part.type === 'field') {
              if (part.fieldname === 'public')
                isPublic = !['false', '0', 'no'].includes(String(part.value).toLowerCase());
              continue;
            }
            if (part.fieldname !== 'file' || stored) {
              part.file.resume();
              continue;
            }
            let size: number;
            try {
              size = await uploads.put(ticket.upload_id, Readable.toWeb(part.file) as ReadableStream<Uint8Array>, {
                filename: part.filename,
              });
            } catch (err) {
              if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' || part.file.truncated) throw tooLarge();
              throw err;
            }
            if (part.file.truncated || size > MAX_ATTACHMENT_BYTES) throw tooLarge();
            stored = {
              filename: part.filename || 'attachment',
              contentType: part.mimetype || 'application/octet-stream',
              size,
            };
          }
        } catch (err) {
          await uploads.delete(ticket.upload_id);
          if ((err as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge();
          if (err instanceof DomainError) throw err;
          const code = (err as { code?: string }).code ?? '';
          if (code.startsWith('FST_')) throw new DomainError('bad_request', `malformed multipart body (${code})`);
          throw err;
        }
        if (!stored) throw new DomainError('bad_request', 'a multipart part named file is required');
        const out = await deps.caller.call(
          'svc.servicedesk.attachments.add',
          {
            issue_key: ticket.issue_key,
            upload_id: ticket.upload_id,
            filename: clip(stored.filename, 255),
            content_type: clip(stored.contentType, 255),
            size: stored.size,
            public: isPublic,
          },
          ctx,
          opts,
        );
        return reply.status(201).send({ data: out });
      },
    });
  });
}
