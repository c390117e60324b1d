import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { Access } from '../../contracts/context.ts';
import { ResolvedServiceAccount, ResolvedUser } from '../../contracts/domains/access.ts';
import { DomainError } from '../../contracts/errors.ts';
import type { KvReader, KvStore } from '../../platform/stores/kv.ts';
import { sha256 } from './crypto.ts';
import type { Clock } from '../../platform/clock.ts';
import { RoleEntity, ServiceAccountEntity, UserEntity } from './entities.ts';

/** Access maps are cached this long; every change that affects one deletes it at once. */
export const ACCESS_CACHE_MS = 15 * 60 * 1000;
/** Longer than any resolution takes (a few database reads), short enough that a stale entry barely lives. */
const INVALIDATE_AGAIN_MS = 1500;

const userKey = (userId: string): string => `access:user:${userId}`;
const keyKey = (apiKeyHash: string): string => `access:key:${apiKeyHash}`;

const CachedKey = z.object({ resolved: ResolvedServiceAccount, expires_at: z.number().nullable() });
type CachedKey = z.infer<typeof CachedKey>;

/**
 * Read side of the access cache. The resolver fills and invalidates it; gateways read it too, through a near cache
 * that Valkey tells of every change (kv-near-cache.ts), so a cached caller usually costs no round trip at all, and a
 * miss goes to the resolver, which fills it. An entry that does not parse counts as a miss.
 */
export class AccessCache {
  private readonly kv: KvReader;
  constructor(kv: KvReader) {
    this.kv = kv;
  }

  async user(userId: string): Promise<ResolvedUser | null> {
    const raw = await this.kv.get(userKey(userId)).catch(() => null);
    return raw ? parseJson(raw, ResolvedUser) : null;
  }

  /** The cached service account of a key and when the key expires (null: never). */
  async apiKey(apiKey: string): Promise<CachedKey | null> {
    const raw = await this.kv.get(keyKey(sha256(apiKey))).catch(() => null);
    return raw ? parseJson(raw, CachedKey) : null;
  }
}

function parseJson<T>(raw: string, schema: z.ZodType<T>): T | null {
  try {
    const parsed = schema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** A cached key that has expired answers like an unknown one. */
export function liveKey(entry: CachedKey, now: number): ResolvedServiceAccount {
  if (entry.expires_at !== null && entry.expires_at <= now) throw new DomainError('unauthorized', 'API key expired');
  return entry.resolved;
}

/** Union of team roles over each team's clients and direct client assignments, merged per client. */
export async function computeClientAccess(em: EntityManager, userId: string): Promise<Record<string, string[]>> {
  const rows = await em.getConnection().execute<{ client_id: string; permissions: string[] }[]>(
    `SELECT tc.client_id, r.permissions
       FROM team_members tm
       JOIN team_clients tc ON tc.team_id = tm.team_id
       JOIN roles r ON r.id = tm.role_id
      WHERE tm.user_id = ?
     UNION ALL
     SELECT ucr.client_id, r.permissions
       FROM user_client_roles ucr
       JOIN roles r ON r.id = ucr.role_id
      WHERE ucr.user_id = ?`,
    [userId, userId],
  );
  const merged = new Map<string, Set<string>>();
  for (const row of rows) {
    const set = merged.get(row.client_id) ?? new Set<string>();
    for (const p of row.permissions) set.add(p);
    merged.set(row.client_id, set);
  }
  return Object.fromEntries([...merged].map(([client, perms]) => [client, [...perms].sort()]));
}

/**
 * Resolution and cache of callers' permissions. The cache lives in Valkey so every instance sees invalidations.
 * Reads go through `reads`, the process's near cache when there is one (the gateways read the same one): a warm
 * resolution then costs no round trip to Valkey, only the request-reply itself.
 */
export class AccessResolver {
  private readonly cache: AccessCache;
  private readonly reads: KvReader;
  private readonly em: () => EntityManager;
  private readonly kv: KvStore;
  private readonly clock: Clock;
  constructor(em: () => EntityManager, kv: KvStore, clock: Clock, reads: KvReader = kv) {
    this.em = em;
    this.kv = kv;
    this.clock = clock;
    this.reads = reads;
    this.cache = new AccessCache(reads);
  }

  async resolveUser(userId: string): Promise<ResolvedUser> {
    const cached = await this.cache.user(userId);
    if (cached) return cached;
    const em = this.em();
    const user = await em.findOne(UserEntity, { id: userId });
    if (!user) throw new DomainError('unauthorized', 'missing or invalid credentials');
    const resolved: ResolvedUser = {
      user_id: user.id,
      email: user.email,
      status: user.status,
      is_super_admin: user.is_super_admin,
      mfa_enabled: user.mfa_enabled,
      access: {
        super_admin: user.is_super_admin,
        all_clients: [],
        clients: user.is_super_admin ? {} : await computeClientAccess(em, userId),
      },
    };
    await this.remember(userKey(userId), resolved);
    return resolved;
  }

  async resolveApiKey(apiKey: string): Promise<ResolvedServiceAccount> {
    const hash = sha256(apiKey);
    let entry = await this.cache.apiKey(apiKey);
    if (!entry) {
      const em = this.em();
      const sa = await em.findOne(ServiceAccountEntity, { api_key_hash: hash });
      if (!sa || !sa.is_active) throw new DomainError('unauthorized', 'missing or invalid credentials');
      const role = await em.findOne(RoleEntity, { id: sa.role_id });
      const perms = [...(role?.permissions ?? [])].sort();
      const access: Access = sa.client_scope.includes('*')
        ? { super_admin: false, all_clients: perms, clients: {} }
        : { super_admin: false, all_clients: [], clients: Object.fromEntries(sa.client_scope.map((c) => [c, perms])) };
      entry = {
        resolved: { service_account_id: sa.id, name: sa.name, access },
        expires_at: sa.expires_at ? sa.expires_at.getTime() : null,
      };
      await this.remember(keyKey(hash), entry);
      // last_used_at is kept on each resolution from the database, so to within the cache lifetime (15 minutes),
      // without a write on every request.
      if (!entry.expires_at || entry.expires_at > this.clock.now())
        await em.nativeUpdate(ServiceAccountEntity, { id: sa.id }, { last_used_at: new Date(this.clock.now()) });
    }
    return liveKey(entry, this.clock.now());
  }

  /** An unreachable cache is a miss, not an outage: resolution then costs the database reads (logged by the store). */
  private async remember(key: string, value: unknown): Promise<void> {
    await this.kv.set(key, JSON.stringify(value), { ttlMs: ACCESS_CACHE_MS }).catch(() => undefined);
  }

  /** Drops cached access of these users (membership, assignment, role, status changes). */
  async invalidateUsers(userIds: Iterable<string>): Promise<void> {
    await this.drop([...new Set(userIds)].map(userKey));
  }

  async invalidateApiKeys(apiKeyHashes: Iterable<string>): Promise<void> {
    await this.drop([...new Set(apiKeyHashes)].map(keyKey));
  }

  /**
   * Deletes now, and once more a moment later: a resolution that read the database just before the change
   * committed may write its stale entry after the first delete; the second one removes it (delayed double delete).
   */
  private async drop(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.kv.del(...keys);
    // Valkey has announced the deletion before answering it; once this process's near cache has applied it, the
    // change's reply cannot overtake it here (the next resolution, or this process's gateway, reads the new access).
    await this.reads.settled?.();
    setTimeout(() => void this.kv.del(...keys).catch(() => undefined), INVALIDATE_AGAIN_MS).unref();
  }

  /** Everyone whose access depends on a role: team members and direct assignees holding it, and its service accounts. */
  async invalidateRole(roleId: string): Promise<void> {
    const em = this.em();
    const users = await em
      .getConnection()
      .execute<{ user_id: string }[]>(
        `SELECT user_id FROM team_members WHERE role_id = ? UNION SELECT user_id FROM user_client_roles WHERE role_id = ?`,
        [roleId, roleId],
      );
    await this.invalidateUsers(users.map((u) => u.user_id));
    const keys = await em.find(ServiceAccountEntity, { role_id: roleId }, { fields: ['api_key_hash'] });
    await this.invalidateApiKeys(keys.map((k) => k.api_key_hash));
  }

  /** Everyone whose access goes through a client (before it is deleted) or a team. */
  async invalidateClient(clientId: string): Promise<void> {
    const users = await this.em()
      .getConnection()
      .execute<{ user_id: string }[]>(
        `SELECT tm.user_id FROM team_members tm JOIN team_clients tc ON tc.team_id = tm.team_id WHERE tc.client_id = ?
         UNION SELECT user_id FROM user_client_roles WHERE client_id = ?`,
        [clientId, clientId],
      );
    await this.invalidateUsers(users.map((u) => u.user_id));
  }

  async invalidateTeam(teamId: string): Promise<void> {
    const users = await this.em()
      .getConnection()
      .execute<{ user_id: string }[]>(`SELECT user_id FROM team_members WHERE team_id = ?`, [teamId]);
    await this.invalidateUsers(users.map((u) => u.user_id));
  }
}
