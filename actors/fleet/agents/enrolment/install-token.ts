import { createHash } from 'node:crypto';

export const TOKEN_PREFIX = 'svc_it_';

/** What is stored of a secret handed out (an install token, a challenge): its hash, never the secret itself. */
export const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

export interface TokenRow {
  id: string;
  environment_id: string;
  client_id: string;
  expires_at: Date | string;
  used_at: Date | string | null;
}

/** Why an install token cannot enrol an agent at `at`, or undefined when it can. */
export const tokenProblem = (row: TokenRow | undefined, at: Date): string | undefined => {
  if (!row) return 'install token is not valid';
  if (row.used_at !== null) return 'install token was already used';
  if (new Date(row.expires_at).getTime() <= at.getTime()) return 'install token has expired';
  return undefined;
};
