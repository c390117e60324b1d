import { randomBytes } from 'node:crypto';
import { sha256 } from '../../crypto.ts';

/** `svc_` + 32 random bytes base64url; stored as sha256 (what the access resolver hashes), shown once. */
export function newApiKey(): { key: string; prefix: string; hash: string } {
  const key = `svc_${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, 12), hash: sha256(key) };
}
