import { randomUUID } from 'node:crypto';
import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { toPgArray } from '../../../../platform/stores/pg-values.ts';
import { assertCanGrant, callerUserId, findRole, sql, type IdentityHandler } from '../common.ts';
import { newApiKey } from './api-key.ts';
import { recordServiceAccount } from './audit.ts';
import { futureOrThrow } from './expiry.ts';
import { findSa, out } from './sa-row.ts';
import { resolveScope, scopeArray } from './scope.ts';

export const createServiceAccount =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.service_accounts.create'> =>
  async (input, { ctx }) => {
    requirePermission(ctx, 'users:write');
    const expiresAt = futureOrThrow(deps, input.expires_at);
    const id = randomUUID();
    const { key, prefix, hash } = newApiKey();
    const em = deps.orm.em.fork();
    const scope = await em.transactional(async (tx) => {
      const role = await findRole(tx, input.role_id);
      const scope = await resolveScope(tx, input.client_scope);
      assertCanGrant(ctx, role.permissions, scope);
      await sql(
        tx,
        `INSERT INTO service_accounts (id, name, description, role_id, client_scope, expires_at, api_key_hash, api_key_prefix, created_by)
           VALUES (?, ?, ?, ?, ?::text[], ?, ?, ?, ?)`,
        [
          id,
          input.name,
          input.description,
          input.role_id,
          toPgArray(scopeArray(scope)),
          expiresAt,
          hash,
          prefix,
          callerUserId(ctx) ?? null,
        ],
      );
      return scope;
    });
    await recordServiceAccount(deps, ctx, 'service_account.created', id, [scopeArray(scope)], {
      name: input.name,
      role_id: input.role_id,
      client_scope: scopeArray(scope),
      expires_at: expiresAt?.toISOString() ?? null,
      api_key_prefix: prefix,
    });
    return { ...out(await findSa(em, id)), api_key: key };
  };
