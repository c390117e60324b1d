import { offsetOf, sql } from '../../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../../deps.ts';
import { ticketOut, type TicketRow } from '../query.ts';
import { count, prepare } from './prepare.ts';

/** One page of the tickets under the filters, with how many match. */
export function ticketListHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.tickets.list': async (q, { ctx }) => {
      const em = deps.orm.em.fork();
      const p = await prepare(em, q, ctx);
      if (!p) return { items: [], total: 0, page: q.page, per_page: q.per_page };
      const [total, rows] = await Promise.all([
        count(deps, p),
        sql<TicketRow>(deps.orm.em.fork(), `SELECT ${p.columns} FROM ${p.from} ORDER BY ${p.order} LIMIT ? OFFSET ?`, [
          ...p.params,
          q.per_page,
          offsetOf(q.page, q.per_page),
        ]),
      ]);
      return { items: rows.map(ticketOut), total, page: q.page, per_page: q.per_page };
    },
  };
}
