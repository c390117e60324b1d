import { clientsWith, requirePermission } from '../../../../contracts/access.ts';
import type { CallerContext } from '../../../../contracts/context.ts';
import { requireOnClient } from '../../../../platform/scope.ts';
import { pageOf } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import type { ReceiverKind } from '../tokens.ts';
import { COLUMNS, KIND, type Row } from './rows.ts';

/** The receivers of `kind` the caller may read, newest first, narrowed to a client or a source when asked. */
export function listReceivers(deps: EventsDeps, kind: ReceiverKind) {
  return async (
    q: { page: number; per_page: number; client_id?: string | undefined; source?: string | undefined },
    { ctx }: { ctx: CallerContext },
  ) => {
    const perm = `${KIND[kind].perm}:read`;
    requirePermission(ctx, perm);
    const where: string[] = ['kind = ?'];
    const params: unknown[] = [kind];
    if (q.client_id !== undefined) {
      requireOnClient(ctx, q.client_id, perm, 'client');
      where.push('client_id = ?');
      params.push(q.client_id);
    } else {
      const scope = clientsWith(ctx, perm);
      if (scope !== 'all') {
        if (scope.length === 0) return { items: [], total: 0, page: q.page, per_page: q.per_page };
        where.push('client_id IN (?)');
        params.push(scope);
      }
    }
    if (q.source !== undefined) {
      where.push('source = ?');
      params.push(q.source);
    }
    return pageOf(
      deps.orm.em.fork(),
      {
        columns: COLUMNS,
        from: `event_receivers WHERE ${where.join(' AND ')}`,
        params,
        order: 'created_at DESC, id DESC',
      },
      q,
      (rows: Row[]) => rows,
    );
  };
}
