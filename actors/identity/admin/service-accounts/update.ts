import { requirePermission } from '../../../../contracts/access.ts';
import type { IdentityDeps } from '../../deps.ts';
import { toPgArray } from '../../../../platform/stores/pg-values.ts';
import { grantableRole, iso, isoOrNull, requireOnEvery, sql, type IdentityHandler } from '../common.ts';
import { recordServiceAccount } from './audit.ts';
import { futureOrThrow } from './expiry.ts';
import { findSa, out } from './sa-row.ts';
import { resolveScope, scopeArray, scopeOf } from './scope.ts';

export const updateServiceAccount =
  (deps: IdentityDeps): IdentityHandler<'svc.identity.service_accounts.update'> =>
  async (input, { ctx }) => {
    requirePermission(ctx, 'users:write');
    const expiresAt = input.expires_at === undefined ? undefined : futureOrThrow(deps, input.expires_at);
    const { hash, changes } = await deps.orm.em.fork().transactional(async (tx) => {
      const sa = await findSa(tx, input.id, true);
      // The key as it stands must be within the caller's reach: an administrator of client A cannot switch off,
      // rename or re-scope a key of client B (or an all-clients key).
      requireOnEvery(ctx, 'users:write', scopeOf(sa.client_scope), 'this service account');
      const changes: Record<string, { from: unknown; to: unknown }> = {};
      if (input.name !== undefined && input.name !== sa.name) changes.name = { from: sa.name, to: input.name };
      if (input.description !== undefined && input.description !== sa.description)
        changes.description = { from: sa.description, to: input.description };
      if (input.role_id !== undefined && input.role_id !== sa.role_id)
        changes.role_id = { from: sa.role_id, to: input.role_id };
      let scope = scopeOf(sa.client_scope);
      if (input.client_scope !== undefined) {
        scope = await resolveScope(tx, input.client_scope);
        const next = scopeArray(scope);
        if (next.join(',') !== sa.client_scope.join(',')) changes.client_scope = { from: sa.client_scope, to: next };
      }
      const currentExpiry = isoOrNull(sa.expires_at);
      if (expiresAt !== undefined && (expiresAt?.toISOString() ?? null) !== currentExpiry)
        changes.expires_at = { from: currentExpiry, to: expiresAt?.toISOString() ?? null };
      if (input.is_active !== undefined && input.is_active !== sa.is_active)
        changes.is_active = { from: sa.is_active, to: input.is_active };
      if (Object.keys(changes).length === 0) return { hash: sa.api_key_hash, changes };
      // Anything that lets the key do more (new role or scope, reactivation, a later expiry) is a grant by the caller.
      if (changes.role_id || changes.client_scope || changes.expires_at || changes.is_active?.to === true)
        await grantableRole(tx, ctx, input.role_id ?? sa.role_id, scope);
      await sql(
        tx,
        `UPDATE service_accounts SET name = ?, description = ?, role_id = ?, client_scope = ?::text[], expires_at = ?, is_active = ?, updated_at = now() WHERE id = ?`,
        [
          input.name ?? sa.name,
          input.description ?? sa.description,
          input.role_id ?? sa.role_id,
          toPgArray(scopeArray(scope)),
          expiresAt === undefined ? (sa.expires_at === null ? null : new Date(iso(sa.expires_at))) : expiresAt,
          input.is_active ?? sa.is_active,
          input.id,
        ],
      );
      return { hash: sa.api_key_hash, changes };
    });
    if (Object.keys(changes).length > 0) {
      // The key's cached access is dropped at once: the next request with it sees the change.
      await deps.access.invalidateApiKeys([hash]);
      // The scope it had and the one it has now.
      const scopes = changes.client_scope
        ? [changes.client_scope.from as string[], changes.client_scope.to as string[]]
        : [(await findSa(deps.orm.em.fork(), input.id)).client_scope];
      await recordServiceAccount(deps, ctx, 'service_account.updated', input.id, scopes, { changes });
    }
    return out(await findSa(deps.orm.em.fork(), input.id));
  };
