import type { SystemCatalogue } from '../../../../contracts/catalogue.ts';
import { RECEIVER_IMMUTABLE } from '../../../../contracts/domains/events.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { refuseChanges } from '../../../../contracts/immutable.ts';
import type { RequestScope } from '../../../../platform/serve.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import { newToken, type ReceiverKind } from '../tokens.ts';
import { alertOut, announce, checkEnvironment, COLUMNS, KIND, loadReceiver, webhookOut, type Row } from './rows.ts';

/**
 * Changes a receiver of `kind` (name, environment, secret, on-call phone) and rotates its token when asked; every
 * instance forgets the old token at once.
 */
export async function updateReceiver(
  deps: EventsDeps,
  kind: ReceiverKind,
  b: {
    id: string;
    name: string;
    environment_id?: string | null | undefined;
    secret?: string | null | undefined;
    rotate_token: boolean;
    oncall_phone?: string | null | undefined;
    client_id?: string | undefined;
    source?: string | undefined;
  },
  scope: RequestScope<SystemCatalogue>,
): Promise<{ row: Row; token?: string }> {
  const { ctx } = scope;
  const em = deps.orm.em.fork();
  const current = await loadReceiver(em, ctx, kind, b.id, 'write');
  // Compared with what GET shows, so its answer sent back as it is passes.
  refuseChanges(b, kind === 'webhook' ? webhookOut(current) : alertOut(current), RECEIVER_IMMUTABLE);
  if (b.environment_id !== undefined) await checkEnvironment(deps, scope, current.client_id, b.environment_id);
  const t = b.rotate_token ? newToken(kind) : undefined;
  const { before, after } = await em.transactional(async (tx) => {
    const before = await loadReceiver(tx, ctx, kind, b.id, 'write', true);
    const sets = ['name = ?', 'updated_at = now()'];
    const params: unknown[] = [b.name];
    const set = (column: string, value: unknown): void => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (b.environment_id !== undefined) set('environment_id', b.environment_id);
    if (b.secret !== undefined) set('secret_enc', b.secret === null ? null : deps.box.seal(b.secret));
    if (kind === 'alert' && b.oncall_phone !== undefined) set('oncall_phone', b.oncall_phone);
    if (t) {
      set('token_hash', t.hash);
      set('token_prefix', t.prefix);
    }
    const [after] = await sql<Row>(
      tx,
      `UPDATE event_receivers SET ${sets.join(', ')} WHERE id = ? RETURNING ${COLUMNS}`,
      [...params, b.id],
    );
    if (!after) throw new DomainError('not_found', `${KIND[kind].what} not found`);
    return { before, after };
  });
  // The old token (and the cached secret and environment under it) stop at once on every instance.
  await announce(deps, after, t ? [before.token_hash, t.hash] : [before.token_hash]);
  const changes: Record<string, unknown> = {};
  if (before.name !== after.name) changes.name = { from: before.name, to: after.name };
  if (before.environment_id !== after.environment_id)
    changes.environment_id = { from: before.environment_id, to: after.environment_id };
  if (b.secret !== undefined) changes.secret = b.secret === null ? 'cleared' : 'set';
  if (before.oncall_phone !== after.oncall_phone)
    changes.oncall_phone = { from: before.oncall_phone, to: after.oncall_phone };
  if (t) changes.token = 'rotated';
  await deps.audit.record(ctx, {
    action: `${KIND[kind].audit}.updated`,
    resource_type: KIND[kind].audit,
    resource_id: b.id,
    client_ids: [before.client_id],
    details: { changes },
  });
  return t ? { row: after, token: t.token } : { row: after };
}
