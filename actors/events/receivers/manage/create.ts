import { randomUUID } from 'node:crypto';
import type { SystemCatalogue } from '../../../../contracts/catalogue.ts';
import type { ReceiverSource } from '../../../../contracts/domains/events-records.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { requireOnClient } from '../../../../platform/scope.ts';
import type { RequestScope } from '../../../../platform/serve.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps } from '../../deps.ts';
import { newToken, type ReceiverKind } from '../tokens.ts';
import { checkEnvironment, COLUMNS, KIND, type Row } from './rows.ts';

/** Creates a receiver of `kind` with a new token (returned once, stored hashed) and its secret sealed. */
export async function createReceiver(
  deps: EventsDeps,
  kind: ReceiverKind,
  b: {
    client_id: string;
    environment_id: string | null;
    source: ReceiverSource;
    name: string;
    secret: string | null;
    oncall_phone?: string | null;
  },
  scope: RequestScope<SystemCatalogue>,
): Promise<{ row: Row; token: string }> {
  const { ctx } = scope;
  requireOnClient(ctx, b.client_id, `${KIND[kind].perm}:write`, 'client');
  await checkEnvironment(deps, scope, b.client_id, b.environment_id);
  const id = randomUUID();
  const t = newToken(kind);
  const createdBy = ctx.principal.kind === 'user' ? ctx.principal.user_id : null;
  const [row] = await sql<Row>(
    deps.orm.em.fork(),
    `INSERT INTO event_receivers (id, kind, source, client_id, environment_id, name, token_hash, token_prefix, secret_enc, oncall_phone, created_by)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
    [
      id,
      kind,
      b.source,
      b.client_id,
      b.environment_id,
      b.name,
      t.hash,
      t.prefix,
      b.secret === null ? null : deps.box.seal(b.secret),
      b.oncall_phone ?? null,
      createdBy,
    ],
  );
  if (!row) throw new DomainError('not_found', 'client not found');
  // The token may have been looked up (and cached as unknown) before it existed: unlikely with 256 random bits, but free to rule out.
  deps.receivers.forget([t.hash]);
  await deps.audit.record(ctx, {
    action: `${KIND[kind].audit}.created`,
    resource_type: KIND[kind].audit,
    resource_id: id,
    client_ids: [b.client_id],
    details: {
      client_id: b.client_id,
      environment_id: b.environment_id,
      source: b.source,
      name: b.name,
      has_secret: b.secret !== null,
      ...(kind === 'alert' ? { oncall_phone: b.oncall_phone ?? null } : {}),
    },
  });
  return { row, token: t.token };
}
