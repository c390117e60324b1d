import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { activeSecrets, newWebhookSecret, signWebhook } from '../../../actors/events/notifications/webhook-signing.ts';

/** Outgoing webhook signatures, checked with the Standard Webhooks library a receiver would use. */

const NOW = new Date('2026-11-21T17:00:00.000Z');
const BODY = JSON.stringify({ type: 'incident.opened', id: 'inc-1' });

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
});
afterEach(() => {
  vi.useRealTimers();
});

describe('newWebhookSecret', () => {
  it('is whsec_ and the base64 of 32 random bytes, different each time', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(a);
  });
});

describe('signWebhook', () => {
  const current = newWebhookSecret();
  const previous = newWebhookSecret();
  const headers = signWebhook({ id: 'msg_1', timestamp: NOW, body: BODY, secrets: [current, previous] });

  it('sets the three headers: id, unix seconds, one v1 signature per secret', () => {
    expect(headers['webhook-id']).toBe('msg_1');
    expect(headers['webhook-timestamp']).toBe(String(NOW.getTime() / 1000));
    const signatures = headers['webhook-signature']?.split(' ') ?? [];
    expect(signatures).toHaveLength(2);
    for (const s of signatures) expect(s).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('verifies with each active secret', () => {
    expect(new Webhook(current).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(new Webhook(previous).verify(BODY, headers)).toEqual(JSON.parse(BODY));
  });

  it('fails for a tampered body, a wrong secret and a stale timestamp', () => {
    expect(() => new Webhook(current).verify(BODY.replace('inc-1', 'inc-2'), headers)).toThrow(/signature/i);
    expect(() => new Webhook(newWebhookSecret()).verify(BODY, headers)).toThrow(/signature/i);
    const stale = signWebhook({
      id: 'msg_2',
      timestamp: new Date(NOW.getTime() - 10 * 60_000),
      body: BODY,
      secrets: [current],
    });
    expect(() => new Webhook(current).verify(BODY, stale)).toThrow(/too old/);
    const changedId = { ...headers, 'webhook-id': 'msg_other' };
    expect(() => new Webhook(current).verify(BODY, changedId)).toThrow(/signature/i);
  });

  it('refuses to sign without a secret', () => {
    expect(() => signWebhook({ id: 'm', timestamp: NOW, body: BODY, secrets: [] })).toThrow(/secret/);
  });
});

describe('activeSecrets', () => {
  const current = { secret: newWebhookSecret() };
  const old = newWebhookSecret();

  it('signs with the previous secret until it expires, then with the current one only', () => {
    const previous = { secret: old, expires_at: new Date(NOW.getTime() + 60_000) };
    expect(activeSecrets(current, previous, NOW)).toEqual([current.secret, old]);
    expect(activeSecrets(current, previous, previous.expires_at)).toEqual([current.secret]);
    expect(activeSecrets(current, null, NOW)).toEqual([current.secret]);
  });

  it('an expired previous secret no longer verifies the delivery', () => {
    const previous = { secret: old, expires_at: new Date(NOW.getTime() - 1) };
    const headers = signWebhook({
      id: 'msg_3',
      timestamp: NOW,
      body: BODY,
      secrets: activeSecrets(current, previous, NOW),
    });
    expect(new Webhook(current.secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(() => new Webhook(old).verify(BODY, headers)).toThrow(/signature/i);
  });
});
