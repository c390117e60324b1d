import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { ReceiverSource } from '../../../contracts/domains/events-records.ts';

/**
 * How each source proves it knows the receiver's shared secret, checked in constant time:
 * - GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body under the secret>`;
 * - GitLab: `X-Gitlab-Token: <the secret>`;
 * - Argo CD and Alertmanager (which do not sign): `Authorization: Bearer <the secret>`, set in their webhook config.
 * Without a secret the check still runs (against a throw-away key) so every delivery costs the same work.
 */

const digest = (s: string | Buffer): Buffer => createHash('sha256').update(s).digest();

/** Equal-length comparison of two values through their SHA-256: no early exit, no length leak. */
const same = (a: string | Buffer, b: string | Buffer): boolean => timingSafeEqual(digest(a), digest(b));

const THROWAWAY = 'no-secret-configured';

export interface SignatureVerdict {
  ok: boolean;
  reason: string;
}

export function verifySignature(
  source: ReceiverSource,
  secret: string | null,
  headers: Record<string, string>,
  body: Buffer,
): SignatureVerdict {
  const key = secret ?? THROWAWAY;
  switch (source) {
    case 'github': {
      const given = headers['x-hub-signature-256'] ?? '';
      const expected = `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
      const ok = same(given.toLowerCase(), expected);
      return {
        ok,
        reason:
          given === ''
            ? 'the X-Hub-Signature-256 header is missing'
            : 'X-Hub-Signature-256 does not match the body under the shared secret',
      };
    }
    case 'gitlab': {
      const given = headers['x-gitlab-token'] ?? '';
      return {
        ok: same(given, key),
        reason:
          given === '' ? 'the X-Gitlab-Token header is missing' : 'X-Gitlab-Token does not match the shared secret',
      };
    }
    case 'argocd':
    case 'alertmanager': {
      const given = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1] ?? '';
      return {
        ok: same(given, key),
        reason:
          given === ''
            ? 'the Authorization: Bearer header is missing'
            : 'the bearer credential does not match the shared secret',
      };
    }
  }
}
