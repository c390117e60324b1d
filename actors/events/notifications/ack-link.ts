import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../../platform/config.ts';

/**
 * Signed acknowledgement links, put in e-mail and chat messages: whoever holds the link may acknowledge that one
 * notification, without signing in, until it expires. The token is `<notification id>.<expiry, unix seconds>.<HMAC>`,
 * the HMAC-SHA256 keyed by a key derived from the events domain's encryption key (never the key itself).
 */

const DAYS_VALID = 7;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export class AckLinks {
  private readonly key: Buffer;
  private readonly base: string;

  constructor(config: Pick<Config, 'SVC_EVENTS_ENCRYPTION_KEY' | 'SVC_MFA_ENCRYPTION_KEY' | 'SVC_FRONTEND_URL'>) {
    const secret = config.SVC_EVENTS_ENCRYPTION_KEY ?? config.SVC_MFA_ENCRYPTION_KEY;
    if (!secret) throw new Error('acknowledgement links need SVC_EVENTS_ENCRYPTION_KEY or SVC_MFA_ENCRYPTION_KEY');
    this.key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'svc notification acknowledgement links', 32));
    this.base = config.SVC_FRONTEND_URL.replace(/\/+$/, '');
  }

  private mac(id: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${id}.${expires}`).digest('base64url');
  }

  token(notificationId: string, now: number): string {
    const expires = Math.floor(now / 1000) + DAYS_VALID * 86_400;
    return `${notificationId}.${expires}.${this.mac(notificationId, expires)}`;
  }

  /** The console page that acknowledges with the token (a button press: link scanners only fetch). */
  url(notificationId: string, now: number): string {
    return `${this.base}/notifications/acknowledge?token=${encodeURIComponent(this.token(notificationId, now))}`;
  }

  /** The notification a token names, or why it does not count. */
  verify(token: string, now: number): { ok: true; id: string } | { ok: false; reason: string } {
    const [id, exp, mac, ...rest] = token.split('.');
    if (!id || !exp || !mac || rest.length > 0 || !UUID.test(id) || !/^\d{1,12}$/.test(exp))
      return { ok: false, reason: 'the link is not an acknowledgement link' };
    const want = Buffer.from(this.mac(id, Number(exp)));
    const got = Buffer.from(mac);
    if (want.length !== got.length || !timingSafeEqual(want, got))
      return { ok: false, reason: 'the link is not an acknowledgement link' };
    if (Number(exp) * 1000 <= now) return { ok: false, reason: 'the link has expired' };
    return { ok: true, id };
  }
}
