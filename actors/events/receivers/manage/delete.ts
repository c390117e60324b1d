import type { CallerContext } from '../../../../contracts/context.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import type { ReceiverKind } from '../tokens.ts';
import { announce, KIND, loadReceiver } from './rows.ts';

/** Deletes a receiver of `kind`; every instance forgets its token at once. */
export async function removeReceiver(
  deps: EventsDeps,
  kind: ReceiverKind,
  id: string,
  ctx: CallerContext,
): Promise<Record<string, never>> {
  const row = await deps.orm.em.fork().transactional(async (tx) => {
    const row = await loadReceiver(tx, ctx, kind, id, 'delete', true);
    await sql(tx, `DELETE FROM event_receivers WHERE id = ?`, [id]);
    return row;
  });
  await announce(deps, row, [row.token_hash]);
  await deps.audit.record(ctx, {
    action: `${KIND[kind].audit}.deleted`,
    resource_type: KIND[kind].audit,
    resource_id: id,
    client_ids: [row.client_id],
    details: { client_id: row.client_id, source: row.source, name: row.name },
  });
  return {};
}
