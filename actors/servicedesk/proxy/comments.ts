import { trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { commentOut } from './outputs.ts';
import { logAction, READ, resolveTarget, WRITE } from './target.ts';

/** A request's comments: listed page by page from the tracker, and added (public or internal) through it. */
export function commentHandlers(deps: SdDeps): SdHandlers {
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
  };
}
