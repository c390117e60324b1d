import type { EntityManager } from '@mikro-orm/postgresql';
import { randomBytes, randomUUID } from 'node:crypto';
import { requirePermission } from '../../../contracts/access.ts';
import type { ServiceAccount } from '../../../contracts/domains/identity-admin.ts';
import { DomainError } from '../../../contracts/errors.ts';
import { sha256 } from '../crypto.ts';
import type { IdentityDeps } from '../deps.ts';
import { toPgArray } from '../seed.ts';
import {
  assertCanGrant,
  callerUserId,
  findRole,
  iso,
  isoOrNull,
  pageOf,
  requireOnEvery,
  sql,
  visibleClients,
  visibleScope,
  visibleServiceAccountsSql,
  type IdentityHandlers,
} from './common.ts';

interface SaRow {
  id: string;
  name: string;
  description: string;
  role_id: string;
  role_name: string;
  client_scope: string[];
  expires_at: string | null;
  is_active: boolean;
  api_key_hash: string;
  api_key_prefix: string;
  created_by: string | null;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `sa.id, sa.name, sa.description, sa.role_id, r.name AS role_name, sa.client_scope, sa.expires_at, sa.is_active, sa.api_key_hash,
  sa.api_key_prefix, sa.created_by, sa.last_used_at, sa.created_at, sa.updated_at`;
const FROM = 'service_accounts sa JOIN roles r ON r.id = sa.role_id';

/** The public view: the key hash never leaves the actor. */
const out = (s: SaRow): ServiceAccount => ({
  id: s.id,
  name: s.name,
  description: s.description,
  role_id: s.role_id,
  role_name: s.role_name,
  client_scope: s.client_scope,
  expires_at: isoOrNull(s.expires_at),
  is_active: s.is_active,
  api_key_prefix: s.api_key_prefix,
  created_by: s.created_by,
  last_used_at: isoOrNull(s.last_used_at),
  created_at: iso(s.created_at),
  updated_at: iso(s.updated_at),
});

/** The public view for a reader: clients of the scope it may not see are left out. */
const seenBy = (visible: 'all' | Set<string>, s: SaRow): ServiceAccount => ({
  ...out(s),
  client_scope: visibleScope(visible, s.client_scope),
});

async function findSa(em: EntityManager, id: string, lock = false): Promise<SaRow> {
  const [sa] = await sql<SaRow>(
    em,
    `SELECT ${COLUMNS} FROM ${FROM} WHERE sa.id = ?${lock ? ' FOR UPDATE OF sa' : ''}`,
    [id],
  );
  if (!sa) throw new DomainError('not_found', 'service account not found');
  return sa;
}

/** `["*"]` → 'all'; otherwise the distinct client ids, each of which must exist. */
async function resolveScope(em: EntityManager, scope: readonly string[]): Promise<'all' | string[]> {
  if (scope.length === 1 && scope[0] === '*') return 'all';
  const ids = [...new Set(scope)];
  const found = new Set(
    (await sql<{ id: string }>(em, `SELECT id FROM clients WHERE id IN (?)`, [ids])).map((r) => r.id),
  );
  const missing = ids.filter((id) => !found.has(id));
  if (missing.length > 0)
    throw new DomainError(
      'not_found',
      `client${missing.length > 1 ? 's' : ''} not found: ${missing.slice(0, 10).join(', ')}`,
    );
  return ids;
}

const scopeArray = (scope: 'all' | string[]): string[] => (scope === 'all' ? ['*'] : scope);
const scopeOf = (stored: readonly string[]): 'all' | string[] => (stored.includes('*') ? 'all' : [...stored]);

function futureOrThrow(deps: IdentityDeps, expiresAt: string | null | undefined): Date | null {
  if (expiresAt === undefined || expiresAt === null) return null;
  const at = new Date(expiresAt);
  if (at.getTime() <= deps.clock.now()) throw new DomainError('bad_request', 'body.expires_at: must be in the future');
  return at;
}

/** `svc_` + 32 random bytes base64url; stored as sha256 (what the access resolver hashes), shown once. */
export function newApiKey(): { key: string; prefix: string; hash: string } {
  const key = `svc_${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, 12), hash: sha256(key) };
}

export function serviceAccountHandlers(deps: IdentityDeps): IdentityHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.identity.service_accounts.list': async ({ page, per_page }, { ctx }) => {
      requirePermission(ctx, 'users:read');
      const visible = visibleClients(ctx, ['users:read']);
      const filter = visibleServiceAccountsSql(visible, 'sa');
      return pageOf(
        fork(),
        {
          columns: COLUMNS,
          from: `${FROM} WHERE ${filter.where}`,
          params: filter.params,
          order: 'sa.created_at DESC, sa.id',
        },
        { page, per_page },
        (rows: SaRow[]) => rows.map((sa) => seenBy(visible, sa)),
      );
    },

    'svc.identity.service_accounts.get': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'users:read');
      const visible = visibleClients(ctx, ['users:read']);
      const filter = visibleServiceAccountsSql(visible, 'sa');
      // A key out of the caller's view is not found, as if it did not exist.
      const [sa] = await sql<SaRow>(fork(), `SELECT ${COLUMNS} FROM ${FROM} WHERE sa.id = ? AND ${filter.where}`, [
        id,
        ...filter.params,
      ]);
      if (!sa) throw new DomainError('not_found', 'service account not found');
      return seenBy(visible, sa);
    },

    'svc.identity.service_accounts.create': async (input, { ctx }) => {
      requirePermission(ctx, 'users:write');
      const expiresAt = futureOrThrow(deps, input.expires_at);
      const id = randomUUID();
      const { key, prefix, hash } = newApiKey();
      const em = fork();
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
      await deps.audit.record(ctx, {
        action: 'service_account.created',
        resource_type: 'service_account',
        resource_id: id,
        // A key concerns the clients of its scope; one of every client (`*`) is a global entry.
        client_ids: scope === 'all' ? [] : scope,
        details: {
          name: input.name,
          role_id: input.role_id,
          client_scope: scopeArray(scope),
          expires_at: expiresAt?.toISOString() ?? null,
          api_key_prefix: prefix,
        },
      });
      return { ...out(await findSa(em, id)), api_key: key };
    },

    'svc.identity.service_accounts.update': async (input, { ctx }) => {
      requirePermission(ctx, 'users:write');
      const expiresAt = input.expires_at === undefined ? undefined : futureOrThrow(deps, input.expires_at);
      const { hash, changes } = await fork().transactional(async (tx) => {
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
        if (changes.role_id || changes.client_scope || changes.expires_at || changes.is_active?.to === true) {
          const role = await findRole(tx, input.role_id ?? sa.role_id);
          assertCanGrant(ctx, role.permissions, scope);
        }
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
        // The scope it had and the one it has now; `*` in either: every client, a global entry.
        const scopes = changes.client_scope
          ? [changes.client_scope.from as string[], changes.client_scope.to as string[]]
          : [(await findSa(fork(), input.id)).client_scope];
        await deps.audit.record(ctx, {
          action: 'service_account.updated',
          resource_type: 'service_account',
          resource_id: input.id,
          client_ids: scopes.some((s) => s.includes('*')) ? [] : scopes.flat(),
          details: { changes },
        });
      }
      return out(await findSa(fork(), input.id));
    },

    'svc.identity.service_accounts.delete': async ({ id }, { ctx }) => {
      requirePermission(ctx, 'users:delete');
      const removed = await fork().transactional(async (tx) => {
        const sa = await findSa(tx, id, true);
        requireOnEvery(ctx, 'users:delete', scopeOf(sa.client_scope), 'this service account');
        await sql(tx, `DELETE FROM service_accounts WHERE id = ?`, [id]);
        return sa;
      });
      await deps.access.invalidateApiKeys([removed.api_key_hash]);
      await deps.audit.record(ctx, {
        action: 'service_account.deleted',
        resource_type: 'service_account',
        resource_id: id,
        client_ids: removed.client_scope.includes('*') ? [] : removed.client_scope,
        details: { name: removed.name, api_key_prefix: removed.api_key_prefix },
      });
      return {};
    },
  };
}
