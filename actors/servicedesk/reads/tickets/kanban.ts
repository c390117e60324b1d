import type { z } from 'zod';
import type { KanbanBoard } from '../../../../contracts/domains/servicedesk.ts';
import { jsonText } from '../../../../platform/json-text.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../../deps.ts';
import { ticketJson } from '../query.ts';
import { count, prepare } from './prepare.ts';

export const KANBAN_LIMIT = 500;

const CATEGORIES = [
  { status_category: 'new', category: 'To Do' },
  { status_category: 'indeterminate', category: 'In Progress' },
  { status_category: 'done', category: 'Done' },
] as const;

const EMPTY_BOARD: z.input<typeof KanbanBoard> = {
  columns: CATEGORIES.map((c) => ({ ...c, count: 0, statuses: [] })),
  total: 0,
  shown: 0,
  limit: KANBAN_LIMIT,
  truncated: false,
};

/** A ticket of the board as JSON (ticketJson), with what places it. */
interface BoardRow {
  status_category: string;
  status: string;
  ticket: string;
}

/**
 * The board (KanbanBoard) as JSON text in parts: the three categories in order, each one's statuses by name, each
 * status's tickets in the board's order.
 */
function boardJson(rows: readonly BoardRow[], total: number): string[] {
  const parts = ['{"columns":['];
  CATEGORIES.forEach((c, i) => {
    const byStatus = new Map<string, string[]>();
    let count = 0;
    for (const r of rows) {
      if (r.status_category !== c.status_category) continue;
      const tickets = byStatus.get(r.status);
      if (tickets) tickets.push(r.ticket);
      else byStatus.set(r.status, [r.ticket]);
      count++;
    }
    parts.push(
      `${i > 0 ? ',' : ''}{"status_category":${JSON.stringify(c.status_category)},"category":${JSON.stringify(c.category)},"count":${count},"statuses":[`,
    );
    [...byStatus.keys()]
      .sort((a, b) => a.localeCompare(b))
      .forEach((status, j) => {
        const tickets = byStatus.get(status)!;
        parts.push(`${j > 0 ? ',' : ''}{"status":${JSON.stringify(status)},"count":${tickets.length},"tickets":[`);
        tickets.forEach((t, k) => {
          if (k > 0) parts.push(',');
          parts.push(t);
        });
        parts.push(']}');
      });
    parts.push(']}');
  });
  parts.push(`],"total":${total},"shown":${rows.length},"limit":${KANBAN_LIMIT},"truncated":${total > rows.length}}`);
  return parts;
}

/** The board: the first tickets under the filters by category and status, with how many match. */
export function kanbanHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.kanban': async (f, { ctx }) => {
      const em = deps.orm.em.fork();
      const p = await prepare(em, f, ctx);
      if (!p) return EMPTY_BOARD;
      // PostgreSQL writes each ticket's JSON: the board reaches this process as 500 strings instead of 500 row objects
      // of 23 fields made into 500 ticket objects, and goes out without being parsed or joined (JsonText).
      const [rows, total] = await Promise.all([
        sql<BoardRow>(
          em,
          `SELECT v.status_category, v.status, ${ticketJson(p.pending)} AS ticket
           FROM ${p.from} ORDER BY ${p.order} LIMIT ${KANBAN_LIMIT}`,
          p.params,
        ),
        count(deps, p),
      ]);
      return jsonText<z.input<typeof KanbanBoard>>(boardJson(rows, total));
    },
  };
}
