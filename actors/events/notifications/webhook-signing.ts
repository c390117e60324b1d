import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Signing of outgoing webhook deliveries per the Standard Webhooks specification, so that receivers can check them
 * with any Standard Webhooks library. During a secret rotation both the current and the not-yet-expired previous
 * secret sign, so a receiver still configured with the old secret keeps accepting deliveries.
 */

/** A fresh signing secret: `whsec_` and the base64 of 32 random bytes, the form the libraries accept. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The three Standard Webhooks headers; one `v1,<base64>` signature per secret, space-separated. */
export function signWebhook(input: {
  id: string;
  timestamp: Date;
  body: string;
  secrets: string[];
}): Record<string, string> {
  if (input.secrets.length === 0) throw new Error('at least one secret is required to sign a webhook');
  const signatures = input.secrets.map((secret) => new Webhook(secret).sign(input.id, input.timestamp, input.body));
  return {
    'webhook-id': input.id,
    'webhook-timestamp': String(Math.floor(input.timestamp.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}

/** The secrets that sign now: the current one, and the previous one until it expires (exclusive). */
export function activeSecrets(
  current: { secret: string },
  previous: { secret: string; expires_at: Date } | null,
  now: Date,
): string[] {
  const secrets = [current.secret];
  if (previous && previous.expires_at.getTime() > now.getTime() && previous.secret !== current.secret)
    secrets.push(previous.secret);
  return secrets;
}
