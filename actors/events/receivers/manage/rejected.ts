import type { CallerContext } from '../../../../contracts/context.ts';
import type { ReceiverSource } from '../../../../contracts/domains/events-records.ts';
import type { RejectedDelivery } from '../../../../contracts/domains/events.ts';
import { iso, pageOf } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import type { ReceiverKind } from '../tokens.ts';
import { loadReceiver } from './rows.ts';

interface RejectedRow {
  id: string;
  receiver_id: string;
  source: ReceiverSource;
  event: string;
  reason: string;
  external_id: string;
  headers: Record<string, string>;
  body_excerpt: string;
  received_at: string;
}
const rejectedOut = (r: RejectedRow): RejectedDelivery => ({ ...r, received_at: iso(r.received_at) });

/** The deliveries a receiver of `kind` refused, newest first (to the caller who may read the receiver). */
export function rejectedDeliveries(deps: EventsDeps, kind: ReceiverKind) {
  return async (q: { id: string; page: number; per_page: number }, { ctx }: { ctx: CallerContext }) => {
    const em = deps.orm.em.fork();
    await loadReceiver(em, ctx, kind, q.id, 'read');
    return pageOf(
      em,
      {
        columns: 'id, receiver_id, source, event, reason, external_id, headers, body_excerpt, received_at',
        from: 'rejected_deliveries WHERE receiver_id = ?',
        params: [q.id],
        order: 'received_at DESC, created_at DESC, id DESC',
      },
      q,
      (rows: RejectedRow[]) => rows.map(rejectedOut),
    );
  };
}
