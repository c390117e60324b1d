import type { SdDeps, SdHandlers } from '../deps.ts';
import { approvalHandlers } from './approvals.ts';
import { attachmentListHandlers } from './attachments.ts';
import { commentHandlers } from './comments.ts';
import { requestCreateHandlers } from './request-create.ts';
import { requestTypeFieldHandlers } from './request-type-fields.ts';
import { transitionHandlers } from './transitions.ts';

/**
 * The proxy to the tracker: a request's comments, transitions, approvals and attachments, behind the ownership check
 * of target.ts, and requests raised on the caller's service desks. Each family of routes has a file named after it.
 */
export function proxyHandlers(deps: SdDeps): SdHandlers {
  return {
    ...commentHandlers(deps),
    ...transitionHandlers(deps),
    ...approvalHandlers(deps),
    ...attachmentListHandlers(deps),
    ...requestCreateHandlers(deps),
    ...requestTypeFieldHandlers(deps),
  };
}
