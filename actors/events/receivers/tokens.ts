import { randomBytes } from 'node:crypto';
import type { ReceiverSource } from '../../../contracts/domains/events-records.ts';
import { sha256Hex } from '../../../platform/secret-box.ts';

/**
 * Receiver tokens: `svc_wh_` (webhook endpoints) or `svc_as_` (alert sources) and 43 base64url characters (256 random
 * bits). Shown once with the receiver URL; stored as their SHA-256 and a 12-character prefix to tell them apart.
 */
export type ReceiverKind = 'webhook' | 'alert';

export const TOKEN_PREFIX: Record<ReceiverKind, string> = { webhook: 'svc_wh_', alert: 'svc_as_' };

export function newToken(kind: ReceiverKind): { token: string; hash: string; prefix: string } {
  const token = `${TOKEN_PREFIX[kind]}${randomBytes(32).toString('base64url')}`;
  return { token, hash: sha256Hex(token), prefix: token.slice(0, 12) };
}

export const tokenHash = (token: string): string => sha256Hex(token);

/** The full receiver URL a sender is configured with. */
export function receiverUrl(backendUrl: string, source: ReceiverSource, token: string): string {
  const base = backendUrl.replace(/\/+$/, '');
  return source === 'alertmanager'
    ? `${base}/api/v1/alerts/webhook/alertmanager/${token}`
    : `${base}/api/v1/webhooks/${source}/${token}`;
}
