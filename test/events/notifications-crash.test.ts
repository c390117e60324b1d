import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../support/identity.ts';
import { WebhookReceiver } from '../support/notification-peers.ts';
import { waitFor } from '../support/processes.ts';
import { endGroup, startSystemProcess, type SystemProcess } from '../support/system-process.ts';

/**
 * The sender killed (SIGKILL) in the middle of a burst of notifications, then started again: every delivery arrives,
 * each under its own webhook-id; none that the receiver acknowledged (200) and the sender recorded is sent again, and
 * the only repeats are deliveries that were in flight when the process died (the receiver tells them by their id).
 */

const tag = randomBytes(4).toString('hex');
const email = `crash-${tag}@example.com`;
const password = `Crash-${randomBytes(12).toString('hex')}`;
const BURST = 120;
const env = {
  SVC_ADMIN_EMAIL: email,
  SVC_ADMIN_PASSWORD: password,
  SVC_NOTIFY_ALLOW_HTTP: 'true',
  SVC_NOTIFY_ALLOW_PRIVATE: 'true',
  SVC_NOTIFY_RETRY_BASE_MS: '200',
};

let first: SystemProcess | undefined;
let second: SystemProcess | undefined;
let hooks: WebhookReceiver;

async function call<T>(base: string, method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, data: (text ? (JSON.parse(text) as { data: T }).data : undefined) as T };
}

/** The printed admin signed in: MFA enrolled, then a second sign-in passing it with a recovery code. */
async function adminToken(base: string): Promise<string> {
  const login = await call<{ access_token: string }>(base, 'POST', '/api/v1/auth/login', { email, password });
  const setup = await call<{ secret: string; recovery_codes: string[] }>(
    base,
    'POST',
    '/api/v1/auth/mfa/setup',
    {},
    login.data.access_token,
  );
  const code = totpCode(setup.data.secret, { now: Date.now });
  expect((await call(base, 'POST', '/api/v1/auth/mfa/confirm', { code }, login.data.access_token)).status).toBe(200);
  const again = await call<{ mfa_token: string }>(base, 'POST', '/api/v1/auth/login', { email, password });
  const verified = await call<{ access_token: string }>(base, 'POST', '/api/v1/auth/mfa/verify', {
    mfa_token: again.data.mfa_token,
    code: setup.data.recovery_codes[0],
  });
  expect(verified.status).toBe(200);
  return verified.data.access_token;
}

beforeAll(async () => {
  hooks = await new WebhookReceiver().start();
  first = await startSystemProcess(`crash-${tag}`, env);
}, 180_000);

afterAll(async () => {
  await endGroup(first?.child, 5_000);
  await endGroup(second?.child, 30_000);
  for (const s of [first, second]) if (s) rmSync(s.analyticsPath, { recursive: true, force: true });
  await hooks?.stop();
}, 60_000);

describe('notifications across a crash of the sender', () => {
  it('delivers every notification of a burst once the sender is back, repeating only what was in flight', async () => {
    const base = first!.consoleUrl;
    const token = await adminToken(base);
    const client = await call<{ id: string }>(
      base,
      'POST',
      '/api/v1/clients',
      { name: `Crash ${tag}`, slug: `crash-${tag}` },
      token,
    );
    const channel = await call<{ id: string; secret: string }>(
      base,
      'POST',
      '/api/v1/notification-channels',
      { client_id: client.data.id, kind: 'webhook', name: 'burst', url: `${hooks.url}/burst` },
      token,
    );
    expect(channel.status).toBe(201);
    hooks.secrets.set('/burst', channel.data.secret);
    // Slow answers, and from the 20th on none before the process dies: deliveries are in flight when it does.
    hooks.delayMs = 150;
    hooks.holdAfter.set('/burst', { count: 20, ms: 120_000 });
    const made = await Promise.all(
      Array.from({ length: BURST }, () =>
        call<{ id: string }>(base, 'POST', `/api/v1/notification-channels/${channel.data.id}/test`, undefined, token),
      ),
    );
    expect(made.map((m) => m.status)).toEqual(Array(BURST).fill(202));
    const ids = new Set(made.map((m) => m.data.id));

    await waitFor(() => hooks.on('/burst').length >= 20, 60_000, 'the burst under way', 50);
    first!.child.proc.kill('SIGKILL');
    await first!.child.exited;
    const beforeRestart = hooks.on('/burst').length;
    expect(beforeRestart).toBeLessThan(BURST);
    hooks.holdAfter.delete('/burst');
    hooks.delayMs = 0;

    second = await startSystemProcess(`crash2-${tag}`, env);
    await waitFor(
      () => new Set(hooks.on('/burst').map((h) => h.id)).size === BURST,
      90_000,
      'every delivery after the restart',
      200,
    );
    const got = hooks.on('/burst');
    expect(new Set(got.map((h) => h.id))).toEqual(ids);
    expect(got.every((h) => h.verified)).toBe(true);
    // Repeats: only deliveries the dead process had sent without recording the answer (at most its concurrency).
    const seen = new Map<string, number>();
    for (const h of got) seen.set(h.id, (seen.get(h.id) ?? 0) + 1);
    const repeated = [...seen.values()].filter((n) => n > 1).length;
    expect(repeated).toBeLessThanOrEqual(32);
    // Nothing is sent again after it was delivered and recorded.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(hooks.on('/burst').length).toBe(got.length);
  }, 240_000);
});
