import { api, unwrap } from '../api/client.ts';

/** Where a fresh session goes: MFA enrolment first when the account has none yet, else where it was headed. */
export async function destinationAfterSignIn(next: string | undefined): Promise<string> {
  const me = await unwrap(api.GET('/api/v1/auth/me'));
  if (!me.data.user.mfa_enabled) return '/mfa/setup';
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/';
}
