import type { EntityManager } from '@mikro-orm/postgresql';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { DomainError } from '../../contracts/errors.ts';

/** Raw-SQL helpers every domain's actors share: timestamps out as ISO UTC, 409 on duplicates, one-page lists. */

/**
 * Timestamps from raw SQL arrive as Postgres text (`2026-01-02 03:04:05.123456+00`); entities give Dates. Both leave as
 * ISO 8601 UTC (`...Z`), the wire format of every response.
 */
const PG_UTC = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00$/;

export function iso(value: Date | string): string {
  if (value instanceof Date) return value.toISOString();
  // The common case (a UTC session, as ours are) without a Date round trip: lists convert two per row.
  const m = PG_UTC.exec(value);
  if (m) return `${m[1]}T${m[2]}.${(m[3] ?? '').slice(0, 3).padEnd(3, '0')}Z`;
  const normalized = value.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00');
  const ms = Date.parse(normalized);
  if (Number.isNaN(ms)) throw new Error(`unparseable timestamp ${value}`);
  return new Date(ms).toISOString();
}
/** A UTC timestamp as iso() writes it (milliseconds, `Z`); to_char's MS truncates the microseconds, as iso() does. */
export const isoSql = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export const isoOrNull = (value: Date | string | null | undefined): string | null =>
  value === null || value === undefined ? null : iso(value);

export const isUniqueViolation = (err: unknown): boolean =>
  err instanceof UniqueConstraintViolationException ||
  (typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505');

/** Runs `fn`; a unique-index violation becomes a 409 with `message` (a concurrent duplicate loses cleanly). */
export async function conflictOnDuplicate<T>(message: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isUniqueViolation(err)) throw new DomainError('conflict', message);
    throw err;
  }
}

/** Raw SQL through the fork (inside `em.transactional`, through the transaction). */
export const sql = <T>(em: EntityManager, query: string, params: unknown[] = []): Promise<T[]> =>
  em.execute<T[]>(query, params);

/** One row by id, or 404 naming `what`; `lock` takes a row lock for the rest of the transaction. */
export async function findById<T>(
  em: EntityManager,
  table: string,
  columns: string,
  id: string,
  what: string,
  lock = false,
): Promise<T> {
  const [row] = await sql<T>(em, `SELECT ${columns} FROM ${table} WHERE id = ?${lock ? ' FOR UPDATE' : ''}`, [id]);
  if (!row) throw new DomainError('not_found', `${what} not found`);
  return row;
}

export const offsetOf = (page: number, perPage: number): number => (page - 1) * perPage;

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  per_page: number;
}

/**
 * One page of a list, as every list subject answers it: `from` is the shared `FROM ... [WHERE ...]` with its `params`;
 * the total counts all of it, the rows are `SELECT columns from ORDER BY order LIMIT per_page OFFSET ...`.
 *
 * One statement, so one round trip and one snapshot (the total and the rows agree): the count joined to the page,
 * which keeps the count's one row when the page is past the end. A one-row outer side joined on `true` can only be a
 * nested loop, so the page's rows keep their order.
 */
export async function pageOf<R, T>(
  em: EntityManager,
  q: { columns: string; from: string; params?: unknown[]; order: string },
  paging: { page: number; per_page: number },
  map: (rows: R[]) => T[] | Promise<T[]>,
): Promise<Page<T>> {
  const params = q.params ?? [];
  const joined = await sql<R & { __total: number; __in_page: boolean | null }>(
    em,
    `SELECT t.__total, p.* FROM (SELECT count(*)::int AS __total FROM ${q.from}) t
       LEFT JOIN LATERAL (SELECT true AS __in_page, ${q.columns} FROM ${q.from} ORDER BY ${q.order} LIMIT ? OFFSET ?) p
         ON true`,
    [...params, ...params, paging.per_page, offsetOf(paging.page, paging.per_page)],
  );
  const total = joined[0]?.__total ?? 0;
  const rows: R[] = [];
  for (const row of joined) {
    if (row.__in_page !== true) continue;
    const { __total: _t, __in_page: _p, ...rest } = row;
    rows.push(rest as unknown as R);
  }
  return { items: await map(rows), total, page: paging.page, per_page: paging.per_page };
}
