import { DomainError } from '../../../contracts/errors.ts';
import type { SessionServices } from './services.ts';

/**
 * Checks the signed-in user's current password before a sensitive change (password change, MFA removal). A wrong one
 * is a 400 naming the field, not a 401: the request's own credentials (the access token) are fine, and a client must
 * not take it for an expired session. Failures count on their own lockout, so a stolen access token cannot be used
 * to guess the password at full speed.
 */
export async function verifyCurrentPassword(
  s: SessionServices,
  userId: string,
  password: string,
  field: string,
): Promise<{ password_hash: string }> {
  const attempt = await s.reauthLockout.begin(userId);
  try {
    const rows = await s.deps.orm.em
      .fork()
      .execute<{ password_hash: string | null }[]>(`SELECT password_hash FROM users WHERE id = ?`, [userId]);
    const hash = rows[0]?.password_hash;
    if (!hash) {
      await attempt.succeed();
      throw new DomainError('bad_request', `${field}: this account has no password (it signs in with single sign-on)`);
    }
    if (!(await s.deps.hasher.verify(hash, password))) {
      await attempt.fail();
      throw new DomainError('bad_request', `${field}: is incorrect`);
    }
    await attempt.succeed();
    return { password_hash: hash };
  } finally {
    await attempt.settle();
  }
}
