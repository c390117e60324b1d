import type { SdDeps, SdHandlers } from '../deps.ts';
import { actionLogHandlers } from './tickets/actions.ts';
import { ticketDetailHandlers } from './tickets/detail.ts';
import { exportHandlers } from './tickets/export.ts';
import { kanbanHandlers } from './tickets/kanban.ts';
import { ticketListHandlers } from './tickets/list.ts';

/**
 * The ticket reads, from the read store with the writes still pending for the sync laid over it: the list, one
 * request, the board, the CSV export and a request's action log. Each route is in tickets/, in a file named after it;
 * tickets/prepare.ts holds how the filtered reads are scoped and counted, locate.ts how one request is found.
 */
export function ticketHandlers(deps: SdDeps): SdHandlers {
  return {
    ...ticketListHandlers(deps),
    ...ticketDetailHandlers(deps),
    ...kanbanHandlers(deps),
    ...exportHandlers(deps),
    ...actionLogHandlers(deps),
  };
}
