import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { SdDeps } from '../../deps.ts';
import { mappingsFor, requireOrganizationFilter } from '../../scope.ts';
import { ticketColumns, ticketOrder, ticketSource, ticketWhere, type Filters } from '../query.ts';

/** Where and how the list, the board and the export read tickets under the filters. */
export interface PreparedRead {
  from: string;
  params: unknown[];
  columns: string;
  pending: string;
  order: string;
  /** The statement counting the matching requests. */
  counted: string;
}

/** The caller's mappings for a read, and where/how tickets are read under the filters (undefined: no mappings). */
export async function prepare(em: EntityManager, f: Filters, ctx: CallerContext): Promise<PreparedRead | undefined> {
  requireOrganizationFilter(ctx, f);
  const mappings = await mappingsFor(em, ctx, 'servicedesk:read', f, { withPending: true });
  if (mappings.length === 0) return undefined;
  const source = ticketSource(mappings);
  const where = ticketWhere(mappings, f, ctx);
  // With no pending writes to merge, only grouped columns filtered: the maintained totals hold the count; only the
  // scope and a search: the narrow search copy is counted instead of the requests themselves.
  const stored = source.pending === 'false';
  const counted =
    stored && where.totals
      ? `SELECT COALESCE(sum(v.requests), 0)::int AS n FROM sd_request_totals v WHERE ${where.sql}`
      : stored && where.searchCopy
        ? `SELECT count(*)::int AS n FROM sd_request_search v WHERE ${where.sql}`
        : `SELECT count(*)::int AS n FROM ${source.from} WHERE ${where.sql}`;
  return {
    from: `${source.from} WHERE ${where.sql}`,
    params: where.params,
    columns: ticketColumns(source.pending),
    pending: source.pending,
    order: ticketOrder(f),
    counted,
  };
}

/** How many requests match: memoized per store generation (the store changes only when synced or written through). */
export const count = (deps: SdDeps, p: { counted: string; params: unknown[] }): Promise<number> =>
  deps.memo.memo(
    'count',
    p.counted,
    p.params,
    async () => (await sql<{ n: number }>(deps.orm.em.fork(), p.counted, p.params))[0]?.n ?? 0,
  );
