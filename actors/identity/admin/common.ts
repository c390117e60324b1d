import type { EntityManager } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import { DomainError } from '../../../contracts/errors.ts';
import type { Handlers } from '../../../platform/serve.ts';

/** The handler table type of the identity domain's admin actor. */
export type IdentityHandlers = Handlers<SystemCatalogue, 'identity'>;

export {
  conflictOnDuplicate,
  findById,
  iso,
  isoOrNull,
  isUniqueViolation,
  offsetOf,
  pageOf,
  sql,
  type Page,
} from '../../../platform/stores/sql.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { toPgArray } from '../../../platform/stores/pg-values.ts';

/** Passes when the caller holds any of `permissions` (on any client, or on `clientId` when given). */
export function requireAny(ctx: CallerContext, permissions: readonly string[], clientId?: string): void {
  const access = ctx.access;
  const ok =
    access !== undefined &&
    (access.super_admin ||
      permissions.some(
        (p) =>
          access.all_clients.includes(p) ||
          (clientId !== undefined
            ? (access.clients[clientId]?.includes(p) ?? false)
            : Object.values(access.clients).some((ps) => ps.includes(p))),
      ));
  if (!ok)
    throw new DomainError(
      'forbidden',
      `missing permission ${permissions.join(' or ')}${clientId ? ' on this client' : ''}`,
    );
}

/**
 * Which clients' details the caller may see in an admin answer: those on which it holds one of `permissions`.
 * `'all'` for super admins and all-client grants. Keeps a user of client A from learning about client B through
 * global admin views (user detail, team detail, role usage, access audit).
 */
export function visibleClients(ctx: CallerContext, permissions: readonly string[]): 'all' | Set<string> {
  const access = ctx.access;
  if (!access) return new Set();
  if (access.super_admin || permissions.some((p) => access.all_clients.includes(p))) return 'all';
  return new Set(
    Object.entries(access.clients)
      .filter(([, perms]) => permissions.some((p) => perms.includes(p)))
      .map(([id]) => id),
  );
}
export const canSee = (visible: 'all' | Set<string>, clientId: string): boolean =>
  visible === 'all' || visible.has(clientId);

/**
 * A WHERE condition with its parameters that keeps, of the rows of an admin view, those the caller may see (see
 * `visibleClients`). Lists filter in SQL, so that their totals count only the rows the caller can page through.
 */
export interface SqlFilter {
  where: string;
  params: unknown[];
}
const NO_FILTER: SqlFilter = { where: 'true', params: [] };
const visibleArray = (visible: Set<string>): string => toPgArray([...visible]);

/**
 * Users (`alias.id`) the caller may see: those with a grant (direct, or through a team) on a visible client, those
 * with no grant on any client (an invitee, an account not placed yet: any holder of users:write manages it), and super
 * admins (they reach every client, as `["*"]` keys do).
 */
export function visibleUsersSql(visible: 'all' | Set<string>, alias: string): SqlFilter {
  if (visible === 'all') return NO_FILTER;
  // bool_or over no grant at all is NULL: an account not placed yet.
  return {
    where: `(${alias}.is_super_admin OR COALESCE((SELECT bool_or(g.client_id = ANY(?::uuid[])) FROM (
        SELECT client_id FROM user_client_roles WHERE user_id = ${alias}.id
        UNION ALL SELECT tc.client_id FROM team_members tm JOIN team_clients tc ON tc.team_id = tm.team_id
          WHERE tm.user_id = ${alias}.id) g), true))`,
    params: [visibleArray(visible)],
  };
}

/** Teams (`alias.id`) the caller may see: those linked to a visible client, and those linked to no client yet. */
export function visibleTeamsSql(visible: 'all' | Set<string>, alias: string): SqlFilter {
  if (visible === 'all') return NO_FILTER;
  return {
    where: `COALESCE((SELECT bool_or(tc.client_id = ANY(?::uuid[])) FROM team_clients tc WHERE tc.team_id = ${alias}.id), true)`,
    params: [visibleArray(visible)],
  };
}

/** Service accounts (`alias.client_scope`) the caller may see: scoped to a visible client, or `["*"]` (every client). */
export function visibleServiceAccountsSql(visible: 'all' | Set<string>, alias: string): SqlFilter {
  if (visible === 'all') return NO_FILTER;
  return {
    where: `('*' = ANY(${alias}.client_scope) OR ${alias}.client_scope && ?::text[])`,
    params: [visibleArray(visible)],
  };
}

/** A service account's scope as the caller may see it: its visible clients (or `"*"`). */
export const visibleScope = (visible: 'all' | Set<string>, scope: readonly string[]): string[] =>
  scope.filter((c) => c === '*' || canSee(visible, c));

/** 404 for a user outside the caller's view, as if it did not exist. */
export async function requireVisibleUser(
  em: EntityManager,
  visible: 'all' | Set<string>,
  userId: string,
): Promise<void> {
  const f = visibleUsersSql(visible, 'u');
  const [row] = await sql<{ id: string }>(em, `SELECT u.id FROM users u WHERE u.id = ? AND ${f.where}`, [
    userId,
    ...f.params,
  ]);
  if (!row) throw new DomainError('not_found', 'user not found');
}

/**
 * Privilege-escalation guard: a caller may only hand out permissions it holds itself, on every client the grant
 * reaches (`'all'` = every client, present and future: only super admins and callers holding them on all clients).
 * Super admins pass.
 */
export function assertCanGrant(
  ctx: CallerContext,
  permissions: readonly string[],
  clients: 'all' | readonly string[],
): void {
  const access = ctx.access;
  if (!access) throw new DomainError('forbidden', 'no access');
  if (access.super_admin) return;
  const all = new Set(access.all_clients);
  if (clients === 'all') {
    const missing = permissions.filter((p) => !all.has(p));
    if (missing.length > 0)
      throw new DomainError(
        'forbidden',
        `cannot grant on all clients permissions you do not hold on all clients: ${missing.slice(0, 10).join(', ')}`,
      );
    return;
  }
  for (const clientId of clients) {
    const held = new Set([...all, ...(access.clients[clientId] ?? [])]);
    const missing = permissions.filter((p) => !held.has(p));
    if (missing.length > 0)
      throw new DomainError(
        'forbidden',
        `cannot grant permissions you do not hold on client ${clientId}: ${missing.slice(0, 10).join(', ')}`,
      );
  }
}

/**
 * Target scoping: changing or removing something that reaches clients (a user through assignments and teams, a team
 * through its client links, a service account through its scope, a role through its holders) needs `permission` on
 * every one of those clients, so an administrator of client A cannot disable, rename, strip or delete what belongs
 * to client B. `'all'` (super admins, service accounts scoped `["*"]`) needs super admin or the permission on all
 * clients. Reaching no client at all leaves only the plain permission check the caller already passed.
 */
export function requireOnEvery(
  ctx: CallerContext,
  permission: string,
  clients: 'all' | readonly string[],
  what: string,
): void {
  const access = ctx.access;
  if (!access) throw new DomainError('forbidden', 'no access');
  if (access.super_admin || access.all_clients.includes(permission)) return;
  if (clients === 'all')
    throw new DomainError(
      'forbidden',
      `${what} reaches every client: only a super admin or a holder of ${permission} on all clients may change it`,
    );
  if (clients.some((c) => !(access.clients[c]?.includes(permission) ?? false)))
    throw new DomainError('forbidden', `missing permission ${permission} on a client ${what} reaches`);
}

/** Clients a user reaches now: direct assignments and the clients of its teams; `'all'` for a super admin. */
export async function clientsOfUser(em: EntityManager, userId: string): Promise<'all' | string[]> {
  const [user] = await sql<{ is_super_admin: boolean }>(em, `SELECT is_super_admin FROM users WHERE id = ?`, [userId]);
  if (user?.is_super_admin) return 'all';
  const rows = await sql<{ client_id: string }>(
    em,
    `SELECT client_id FROM user_client_roles WHERE user_id = ?
     UNION SELECT tc.client_id FROM team_members tm JOIN team_clients tc ON tc.team_id = tm.team_id WHERE tm.user_id = ?`,
    [userId, userId],
  );
  return rows.map((r) => r.client_id);
}

export interface RoleRow {
  id: string;
  name: string;
  permissions: string[];
  is_system: boolean;
}

/**
 * The role a grant hands out, share-locked until the grant's transaction ends: call it inside that transaction,
 * before checking the permissions. `roles.update` takes the row FOR UPDATE before it reads where the role is held, so
 * a grant and a role edit run one after the other: the grant waits and checks the edited permissions (READ COMMITTED
 * reads the newest version of a row it waited on), or the edit waits and sees the grant among the role's holders.
 */
export async function findRole(em: EntityManager, roleId: string): Promise<RoleRow> {
  const [role] = await sql<RoleRow>(em, `SELECT id, name, permissions, is_system FROM roles WHERE id = ? FOR SHARE`, [
    roleId,
  ]);
  if (!role) throw new DomainError('not_found', 'role not found');
  return role;
}

export interface ClientRow {
  id: string;
  name: string;
  slug: string;
}

export async function findClient(em: EntityManager, clientId: string): Promise<ClientRow> {
  const [client] = await sql<ClientRow>(em, `SELECT id, name, slug FROM clients WHERE id = ?`, [clientId]);
  if (!client) throw new DomainError('not_found', 'client not found');
  return client;
}

/** The user id of a signed-in caller, or undefined for service accounts. */
export const callerUserId = (ctx: CallerContext): string | undefined =>
  ctx.principal.kind === 'user' ? ctx.principal.user_id : undefined;

/** The handler of one subject of that table. */
export type IdentityHandler<S extends keyof IdentityHandlers> = NonNullable<IdentityHandlers[S]>;

/** The role a grant hands out on `clients` (share-locked, see `findRole`), once the caller may grant it there. */
export async function grantableRole(
  em: EntityManager,
  ctx: CallerContext,
  roleId: string,
  clients: 'all' | readonly string[],
): Promise<RoleRow> {
  const role = await findRole(em, roleId);
  assertCanGrant(ctx, role.permissions, clients);
  return role;
}

/** An existing grant of a role: a direct assignment or a team membership, the row `where` picks with `params`. */
export interface RoleHolding {
  table: 'user_client_roles' | 'team_members';
  where: string;
  params: unknown[];
  /** Lock the row FOR UPDATE, when nothing the caller locked already keeps it from changing. */
  forUpdate: boolean;
  /** The 404 message when there is no such grant. */
  missing: string;
}

/**
 * Moves an existing grant to the role `roleId`, which the caller must be able to grant on `clients`. `refuse` runs
 * once the grant is found, before the role is read: it rejects a change to what identifies the grant.
 */
export async function changeRole(
  tx: EntityManager,
  ctx: CallerContext,
  holding: RoleHolding,
  roleId: string,
  clients: readonly string[],
  refuse: () => void,
): Promise<{ role: RoleRow; previous: string }> {
  const [current] = await sql<{ role_id: string }>(
    tx,
    `SELECT role_id FROM ${holding.table} WHERE ${holding.where}${holding.forUpdate ? ' FOR UPDATE' : ''}`,
    holding.params,
  );
  if (!current) throw new DomainError('not_found', holding.missing);
  refuse();
  const role = await grantableRole(tx, ctx, roleId, clients);
  await sql(tx, `UPDATE ${holding.table} SET role_id = ? WHERE ${holding.where}`, [roleId, ...holding.params]);
  return { role, previous: current.role_id };
}
