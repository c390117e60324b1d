import type { MikroORM } from '@mikro-orm/postgresql';
import { CompiledQuery, type QueryResult } from 'kysely';
import { DomainError } from '../../../contracts/errors.ts';
import { currentDeadline } from '../../../platform/deadline.ts';

/** Runs one SQL statement with `$n` bind parameters (server-side binding, never values in the text). */
export type BoundQuery = <R>(sql: string, params: readonly unknown[]) => Promise<R[]>;

interface KyselyExecutor {
  executeQuery(query: CompiledQuery): Promise<QueryResult<unknown>>;
}

/** Margin the runtime keeps between a statement's end and the request deadline (platform/stores/postgres.ts). */
const STATEMENT_MARGIN_MS = 150;

/**
 * A search in a read-only, repeatable-read transaction whose statements stop after `timeoutMs` (or earlier, at the request deadline):
 * no query, however expensive, holds the database longer. A search stopped by that limit answers 504 with a message
 * that says so; stopped by the request deadline, the runtime's usual 504.
 */
export async function readOnlySearch<T>(
  orm: MikroORM,
  timeoutMs: number,
  work: (query: BoundQuery) => Promise<T>,
): Promise<T> {
  const scope = currentDeadline();
  const left = scope ? scope.deadline - Date.now() - STATEMENT_MARGIN_MS : Number.POSITIVE_INFINITY;
  const limit = Math.max(1, Math.floor(Math.min(timeoutMs, left)));
  try {
    return await orm.em.fork().transactional(async (tx) => {
      // One snapshot for every statement of the search, so a page's total and its rows agree.
      await tx.execute('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      // SET takes no bind parameters; `limit` is an integer computed here. LOCAL: gone at commit.
      await tx.execute(`SET LOCAL statement_timeout = ${limit}`);
      const ctx = tx.getTransactionContext<KyselyExecutor>();
      if (!ctx) throw new Error('no transaction context');
      return work(
        async <R>(sql: string, params: readonly unknown[]) =>
          (await ctx.executeQuery(CompiledQuery.raw(sql, [...params]))).rows as R[],
      );
    });
  } catch (err) {
    if (timeoutMs < left && (err as { code?: unknown }).code === '57014') {
      throw new DomainError(
        'timeout',
        `the search took longer than ${timeoutMs / 1000} s and was stopped; narrow the query`,
      );
    }
    throw err;
  }
}
