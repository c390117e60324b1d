import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { DomainError } from '../../contracts/errors.ts';
import type { Clock } from '../../platform/clock.ts';
import type { KvStore } from '../../platform/stores/kv.ts';
import { Lockout } from './lockout.ts';
import { cancelOneTimeTokens } from './one-time-tokens.ts';
import { checkPasswordHistory, checkPasswordPolicy, storePassword } from './password-policy.ts';
import type { PasswordHasher } from './passwords.ts';
import { normalizeEmail } from './session/services.ts';
import { revokeAllSessions } from './sessions.ts';

/**
 * The seeded admin (SVC_ADMIN_EMAIL) as an operator at the shell sees it: `npm run admin` (scripts/admin.ts) tells
 * whether the password in SVC_ADMIN_PASSWORD is the account's, and sets a new one when it is not.
 */

export interface AdminAccount {
  id: string;
  email: string;
  status: string;
}

/** The user with this e-mail (any case), or null: also before the migrations have made the table. */
export async function findAdmin(em: EntityManager, email: string): Promise<AdminAccount | null> {
  const [table] = await em.execute<{ users: string | null }[]>(`SELECT to_regclass('users')::text AS users`);
  if (!table?.users) return null;
  const [row] = await em.execute<AdminAccount[]>(`SELECT id, email, status FROM users WHERE lower(email) = ?`, [
    normalizeEmail(email),
  ]);
  return row ?? null;
}

export type AdminPasswordState = { state: 'absent' } | { state: 'matches' | 'differs'; account: AdminAccount };

/**
 * Whether `email` exists and `password` signs it in. The seed creates the account only when absent, so a password
 * generated later (data/ removed, a second checkout on the same database) is not the account's.
 */
export async function adminPasswordState(
  em: EntityManager,
  hasher: PasswordHasher,
  email: string,
  password: string,
): Promise<AdminPasswordState> {
  const account = await findAdmin(em, email);
  if (!account) return { state: 'absent' };
  const [row] = await em.execute<{ password_hash: string | null }[]>(`SELECT password_hash FROM users WHERE id = ?`, [
    account.id,
  ]);
  const matches = row?.password_hash ? await hasher.verify(row.password_hash, password) : false;
  return { state: matches ? 'matches' : 'differs', account };
}

export interface ResetDeps {
  orm: MikroORM;
  kv: KvStore;
  hasher: PasswordHasher;
  clock: Clock;
}

/**
 * Sets the account's password as a completed reset does: the password policy and history first, then in one
 * transaction the new hash, outstanding reset links cancelled and every session revoked. Throws `bad_request` naming
 * the rule, `not_found` without the account. Its lockouts are cleared apart (clearAdminLockouts): the store that
 * keeps them may be down while the password is set.
 */
export async function resetAdminPassword(
  deps: Omit<ResetDeps, 'kv'>,
  email: string,
  password: string,
): Promise<{ account: AdminAccount; sessionsRevoked: number }> {
  checkPasswordPolicy(password);
  const em = deps.orm.em.fork();
  const found = await findAdmin(em, email);
  if (!found) throw new DomainError('not_found', `no user ${email} in this database`);
  await checkPasswordHistory(deps, em, found.id, password);
  const hash = await deps.hasher.hash(password);
  const result = await deps.orm.em.fork().transactional(async (tx) => {
    const [account] = await tx.execute<AdminAccount[]>(`SELECT id, email, status FROM users WHERE id = ? FOR UPDATE`, [
      found.id,
    ]);
    if (!account) throw new DomainError('not_found', `no user ${email} in this database`);
    await storePassword(deps, tx, account.id, hash);
    await cancelOneTimeTokens(tx, deps, account.id, 'reset');
    const sessionsRevoked = await revokeAllSessions(deps, tx, account.id, 'admin_password_reset');
    return { account, sessionsRevoked };
  });
  return result;
}

/** Clears the account's login lockout (per e-mail) and re-authentication lockout (per user). */
export async function clearAdminLockouts(deps: Pick<ResetDeps, 'kv' | 'clock'>, account: AdminAccount): Promise<void> {
  await new Lockout(deps.kv, deps.clock, 'login').reset(normalizeEmail(account.email));
  await new Lockout(deps.kv, deps.clock, 'reauth').reset(account.id);
}
