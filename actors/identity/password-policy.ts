import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DomainError } from '../../contracts/errors.ts';
import type { IdentityDeps } from './deps.ts';

/** Password policy (docs/api/identity.md): at least 12 characters, no composition rules, not common, not recent. */
export const MIN_PASSWORD_LENGTH = 12;
export const PASSWORD_HISTORY = 5;

/** The 10,000 most common passwords (blocklist/README.md says where the list comes from), lower-cased. */
let blocklist: ReadonlySet<string> | undefined;
function commonPasswords(): ReadonlySet<string> {
  blocklist ??= new Set(
    readFileSync(new URL('./blocklist/common-passwords.txt', import.meta.url), 'utf8')
      .split('\n')
      .map((l) => l.trim().toLowerCase())
      .filter((l) => l.length > 0),
  );
  return blocklist;
}

export const isCommonPassword = (password: string): boolean => commonPasswords().has(password.toLowerCase());

/** The checks that need no user: length (in characters, not bytes) and the blocklist. Throws 400 naming the rule. */
export function checkPasswordPolicy(password: string, field = 'password'): void {
  if ([...password].length < MIN_PASSWORD_LENGTH)
    throw new DomainError('bad_request', `${field}: must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (isCommonPassword(password))
    throw new DomainError('bad_request', `${field}: is one of the 10,000 most common passwords; choose another`);
}

/**
 * Refuses a password equal to one of the user's last PASSWORD_HISTORY passwords: the current hash and the most recent
 * history entries (the current one is normally the newest entry; users created without history still have it).
 */
export async function checkPasswordHistory(
  deps: Pick<IdentityDeps, 'hasher'>,
  em: EntityManager,
  userId: string,
  password: string,
  field = 'password',
): Promise<void> {
  const rows = await em.execute<{ password_hash: string }[]>(
    `SELECT password_hash FROM (
       SELECT password_hash, 0 AS ord, NULL::timestamptz AS created_at FROM users WHERE id = ? AND password_hash IS NOT NULL
       UNION ALL
       SELECT password_hash, 1 AS ord, created_at FROM password_history WHERE user_id = ?
     ) h ORDER BY ord, created_at DESC LIMIT ?`,
    [userId, userId, PASSWORD_HISTORY + 1],
  );
  const hashes = [...new Set(rows.map((r) => r.password_hash))].slice(0, PASSWORD_HISTORY);
  for (const hash of hashes) {
    if (await deps.hasher.verify(hash, password)) {
      throw new DomainError('bad_request', `${field}: must differ from your last ${PASSWORD_HISTORY} passwords`);
    }
  }
}

/** Stores a new password hash on the user and in the history (run inside the caller's transaction). */
export async function storePassword(
  deps: Pick<IdentityDeps, 'clock'>,
  em: EntityManager,
  userId: string,
  hash: string,
): Promise<void> {
  const now = new Date(deps.clock.now());
  await em.execute(`UPDATE users SET password_hash = ?, updated_at = ? WHERE id = ?`, [hash, now, userId]);
  // Strictly after the previous entry even when the clock has not moved (tests, clock skew): order is what counts.
  await em.execute(
    `INSERT INTO password_history (id, user_id, password_hash, created_at)
     SELECT ?, ?, ?, GREATEST(?::timestamptz, COALESCE(max(created_at) + interval '1 millisecond', ?::timestamptz)) FROM password_history WHERE user_id = ?`,
    [randomUUID(), userId, hash, now, now, userId],
  );
}
