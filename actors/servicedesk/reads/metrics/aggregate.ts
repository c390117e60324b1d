import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallerContext } from '../../../../contracts/context.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { SdDeps } from '../../deps.ts';
import { mappingsFor, requireOrganizationFilter, type MappingRow } from '../../scope.ts';

/** What the metrics routes share: the caller's mappings, one memoized row of aggregates, and how figures are rounded. */

export const num = (v: unknown): number | null =>
  v === null || v === undefined ? null : Math.round(Number(v) * 100) / 100;
export const int = (v: unknown): number => Number(v ?? 0);

/** One row of aggregates, memoized per store generation. */
export const aggregate = async (
  deps: SdDeps,
  kind: string,
  query: string,
  params: unknown[],
): Promise<Record<string, unknown> | undefined> =>
  (await deps.memo.memo(kind, query, params, () => sql<Record<string, unknown>>(deps.orm.em.fork(), query, params)))[0];

export const scoped = async (
  em: EntityManager,
  ctx: CallerContext,
  q: { organization_id?: string | undefined; client_id?: string | undefined },
): Promise<MappingRow[]> => {
  requireOrganizationFilter(ctx, q);
  return mappingsFor(em, ctx, 'servicedesk:read', q);
};
