import type { z } from 'zod';
import type { Approval, Attachment, Comment } from '../../../contracts/domains/servicedesk-proxy.ts';
import { dtoDate, type ApprovalDto, type AttachmentDto, type CommentDto, type TrackerUser } from '../tracker/api.ts';

/** The tracker's comments, approvals and attachments as the proxy routes answer them. */

const person = (u: TrackerUser): z.output<typeof Comment>['author'] =>
  u ? { account_id: u.accountId ?? null, display_name: u.displayName ?? null, email: u.emailAddress ?? null } : null;
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
