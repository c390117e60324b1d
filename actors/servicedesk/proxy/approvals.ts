import { trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { approvalOut } from './outputs.ts';
import { logAction, READ, resolveTarget, WRITE } from './target.ts';

/** A request's approvals: listed from the tracker, and one of them approved or declined through it. */
export function approvalHandlers(deps: SdDeps): SdHandlers {
  return {
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
  };
}
