import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollAgent, startAgent, type RunningAgent } from '../../agent/index.ts';
import { publishEvent } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { api, expectStatus } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import { ChatPeer, WebhookReceiver } from '../support/notification-peers.ts';
import { SmtpPeer } from '../support/smtp-peer.ts';
import type { TestSystem } from '../support/system.ts';
import {
  createReceiver,
  customRole,
  deliver,
  eventually,
  fixture,
  startEventsSystem,
  userWithRole,
} from './support.ts';

/**
 * Notifications end to end, against the real servers and local peers: a webhook receiver that verifies every delivery
 * with the `standardwebhooks` library, a chat product's incoming webhook, the SMTP peer. A real agent is stopped and
 * started for the offline rule; Alertmanager's payloads fire the alert rule. The test system's clock stands still
 * unless a test moves it, so every wait on minutes is a move of the clock (the rules' minutes are fractions).
 */

let sys: TestSystem;
let root: string;
let clientId: string;
let envId: string;
let hostId: string;
let hostname: string;
let stateDir: string;
let agent: RunningAgent | undefined;
let hooks: WebhookReceiver;
let chat: ChatPeer;
let smtp: SmtpPeer;

type Json = Record<string, unknown>;
const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown, token = root) =>
  api(sys, { token })(method, url, body);
async function ok<T = Json>(
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  body: unknown,
  status: number,
  token = root,
): Promise<T> {
  const res = await call(method, url, body, token);
  expectStatus(res, status);
  return (res.body ? res.json().data : undefined) as T;
}

async function webhookChannel(path: string, name = path): Promise<{ id: string; secret: string }> {
  const ch = await ok<{ id: string; secret: string }>(
    'POST',
    '/api/v1/notification-channels',
    { client_id: clientId, kind: 'webhook', name, url: `${hooks.url}${path}` },
    201,
  );
  hooks.secrets.set(path, ch.secret);
  return ch;
}
const chatChannel = async (path: string): Promise<string> =>
  (
    await ok<{ id: string }>(
      'POST',
      '/api/v1/notification-channels',
      { client_id: clientId, kind: 'chat', name: `chat ${path}`, url: `${chat.url}${path}` },
      201,
    )
  ).id;

const startTheAgent = async (): Promise<void> => {
  agent = await startAgent({ stateDir, intervalMs: 500, inventoryIntervalMs: 3_600_000, log: createLogger('silent') });
};
const agentStatus = async (): Promise<string> =>
  ((await ok<{ agent_status: string }>('GET', `/api/v1/hosts/${hostId}`, undefined, 200)).agent_status as string) ?? '';

/** Stops the agent and moves the clock past the stale timeout, until the fleet marks the host offline. */
async function agentGoesOffline(): Promise<void> {
  await agent!.stop(2_000);
  agent = undefined;
  await eventually(
    async () => {
      sys.clock.advance(1_000);
      return agentStatus();
    },
    (s) => s === 'offline',
    'the host offline',
    30_000,
  );
}

async function agentComesBack(): Promise<void> {
  await startTheAgent();
  await eventually(agentStatus, (s) => s === 'online', 'the host online', 30_000);
}

beforeAll(async () => {
  [hooks, chat, smtp] = await Promise.all([
    new WebhookReceiver().start(),
    new ChatPeer().start(),
    new SmtpPeer().start(),
  ]);
  ({ sys, root } = await startEventsSystem({
    SVC_AGENT_STALE_TIMEOUT_SECONDS: '2',
    SVC_NOTIFY_ALLOW_HTTP: 'true',
    SVC_NOTIFY_ALLOW_PRIVATE: 'true',
    SVC_NOTIFY_RETRY_BASE_MS: '300',
    SVC_NOTIFY_MAX_ATTEMPTS: '4',
    SVC_NOTIFY_TIMEOUT_MS: '3000',
    SVC_SMTP_HOST: '127.0.0.1',
    SVC_SMTP_PORT: String(smtp.port),
    SVC_FRONTEND_URL: 'https://console.example.test',
  }));
  await sys.console!.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(sys.console!.server.address() as AddressInfo).port}`;
  clientId = (await createClient(sys)).id;
  envId = (
    await ok<{ id: string }>('POST', `/api/v1/clients/${clientId}/environments`, { name: 'Prod', slug: 'prod' }, 201)
  ).id;
  const token = (await ok<{ token: string }>('POST', `/api/v1/environments/${envId}/install-tokens`, {}, 201)).token;
  stateDir = mkdtempSync(join(tmpdir(), 'notify-agent-'));
  hostname = `notify-${sys.tag}`;
  ({ host_id: hostId } = await enrollAgent({ server: baseUrl, token, stateDir, hostname }));
  await agentComesBack();
  hostname = (await ok<{ hostname: string }>('GET', `/api/v1/hosts/${hostId}`, undefined, 200)).hostname;
}, 120_000);

afterAll(async () => {
  await agent?.stop(2_000);
  await sys?.stop();
  await Promise.all([hooks?.stop(), chat?.stop(), smtp?.stop()]);
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

describe('notification channels', () => {
  it('a webhook channel shows its whsec_ secret once; its test delivery verifies with standardwebhooks', async () => {
    const ch = await webhookChannel('/test');
    expect(ch.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const shown = await ok<Json>('GET', `/api/v1/notification-channels/${ch.id}`, undefined, 200);
    expect(shown).toMatchObject({ kind: 'webhook', has_secret: true, url: `${hooks.url}/test` });
    expect(JSON.stringify(shown)).not.toContain(ch.secret);

    const delivery = await ok<{ id: string; status: string }>(
      'POST',
      `/api/v1/notification-channels/${ch.id}/test`,
      undefined,
      202,
    );
    const [got] = await eventually(
      async () => hooks.on('/test'),
      (r) => r.length === 1,
      'the test delivery',
    );
    expect(got).toMatchObject({ id: delivery.id, verified: true, body: { type: 'notification.test' } });
    const log = await eventually(
      () =>
        ok<{ status: string; attempts: { status_code: number }[] }[]>(
          'GET',
          `/api/v1/notification-channels/${ch.id}/deliveries`,
          undefined,
          200,
        ),
      (l) => l[0]?.status === 'delivered',
      'the delivery log',
    );
    expect(log[0]!.attempts.map((a) => a.status_code)).toEqual([200]);
  }, 120_000);

  it('retries 500 twice then delivers under one webhook-id with growing pauses; a 400 is not retried; redelivery keeps the id', async () => {
    const flaky = await webhookChannel('/flaky');
    hooks.script.set('/flaky', [{ status: 500 }, { status: 500 }]);
    const d = await ok<{ id: string }>('POST', `/api/v1/notification-channels/${flaky.id}/test`, undefined, 202);
    const got = await eventually(
      async () => hooks.on('/flaky'),
      (r) => r.length === 3,
      'three attempts',
      60_000,
    );
    expect(new Set(got.map((g) => g.id))).toEqual(new Set([d.id]));
    expect(got.every((g) => g.verified)).toBe(true);
    const gaps = [got[1]!.at - got[0]!.at, got[2]!.at - got[1]!.at];
    expect(gaps[0]).toBeGreaterThanOrEqual(250);
    expect(gaps[1]).toBeGreaterThan(gaps[0]!);
    const [log] = await eventually(
      () =>
        ok<{ status: string; attempts: { status_code: number }[] }[]>(
          'GET',
          `/api/v1/notification-channels/${flaky.id}/deliveries`,
          undefined,
          200,
        ),
      (l) => l[0]?.status === 'delivered',
      'delivered after the retries',
    );
    expect(log!.attempts.map((a) => a.status_code)).toEqual([500, 500, 200]);

    const bad = await webhookChannel('/bad');
    hooks.script.set('/bad', [{ status: 400 }]);
    const b = await ok<{ id: string }>('POST', `/api/v1/notification-channels/${bad.id}/test`, undefined, 202);
    const [failed] = await eventually(
      () =>
        ok<{ status: string; reason: string; attempts: unknown[] }[]>(
          'GET',
          `/api/v1/notification-channels/${bad.id}/deliveries`,
          undefined,
          200,
        ),
      (l) => l[0]?.status === 'failed',
      'the 400 failed',
    );
    expect(failed!.reason).toMatch(/answered 400/);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(hooks.on('/bad')).toHaveLength(1);

    // Redelivered on request: the same id, so the receiver can tell it is the same message.
    await ok('POST', `/api/v1/notification-deliveries/${b.id}/redeliver`, undefined, 202);
    const again = await eventually(
      async () => hooks.on('/bad'),
      (r) => r.length === 2,
      'the redelivery',
    );
    expect(again[1]).toMatchObject({ id: b.id, verified: true, status: 200 });
  }, 120_000);

  it('honours Retry-After on a 429', async () => {
    const slow = await webhookChannel('/busy');
    hooks.script.set('/busy', [{ status: 429, retryAfter: '2' }]);
    await ok('POST', `/api/v1/notification-channels/${slow.id}/test`, undefined, 202);
    const got = await eventually(
      async () => hooks.on('/busy'),
      (r) => r.length === 2,
      'the retry after the pause asked for',
      60_000,
    );
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(1_900);
  }, 120_000);

  it('a redelivery while a retry pause runs replaces the waiting job: the delivery is sent by one job, not two', async () => {
    const dup = await webhookChannel('/dup');
    hooks.script.set('/dup', [
      { status: 429, retryAfter: '3' },
      { status: 429, retryAfter: '3' },
    ]);
    const d = await ok<{ id: string }>('POST', `/api/v1/notification-channels/${dup.id}/test`, undefined, 202);
    await eventually(
      async () => hooks.on('/dup'),
      (r) => r.length === 1,
      'the first attempt',
      60_000,
    );
    // Once the sender has recorded that attempt's outcome (its reason, written after the answer arrived, which the
    // receiver sees first), its retry waits 3 s; the delivery is made to look stalled, so a redelivery is allowed now.
    await eventually(
      async () => sys.sql<{ reason: string | null }>(`SELECT reason FROM notification_deliveries WHERE id = ?`, [d.id]),
      (rows) => rows[0]?.reason != null,
      'the first attempt recorded',
      30_000,
    );
    await sys.sql(`UPDATE notification_deliveries SET updated_at = now() - interval '2 minutes' WHERE id = ?`, [d.id]);
    await ok('POST', `/api/v1/notification-deliveries/${d.id}/redeliver`, undefined, 202);
    const got = await eventually(
      async () => hooks.on('/dup'),
      (r) => r.some((h) => h.status === 200),
      'delivered',
      60_000,
    );
    // The first job woke while the redelivery's waited out its own pause: it sent nothing.
    await new Promise((r) => setTimeout(r, 4_000));
    const all = hooks.on('/dup');
    expect(all.map((h) => h.status)).toEqual([429, 429, 200]);
    expect(all[2]!.at - all[1]!.at).toBeGreaterThanOrEqual(2_900);
    expect(got.every((h) => h.id === d.id)).toBe(true);
    const [logged] = await ok<{ status: string; attempts: { status_code: number }[] }[]>(
      'GET',
      `/api/v1/notification-channels/${dup.id}/deliveries`,
      undefined,
      200,
    );
    expect(logged).toMatchObject({ status: 'delivered' });
    expect(logged!.attempts.map((a) => a.status_code)).toEqual([429, 429, 200]);
  }, 120_000);

  it('signs with the old and the new secret during a rotation, then with the new one alone', async () => {
    const ch = await webhookChannel('/rotating');
    const old = ch.secret;
    const rotated = await ok<{ secret: string; previous_secret_expires_at: string | null }>(
      'POST',
      `/api/v1/notification-channels/${ch.id}/rotate-secret`,
      { overlap_hours: 1 },
      200,
    );
    expect(rotated.secret).not.toBe(old);
    expect(rotated.previous_secret_expires_at).not.toBeNull();
    // A receiver still on the old secret accepts the delivery; one on the new secret too.
    hooks.secrets.set('/rotating', old);
    await ok('POST', `/api/v1/notification-channels/${ch.id}/test`, undefined, 202);
    await eventually(
      async () => hooks.on('/rotating'),
      (r) => r.length === 1,
      'signed for the old secret',
    );
    hooks.secrets.set('/rotating', rotated.secret);
    await ok('POST', `/api/v1/notification-channels/${ch.id}/test`, undefined, 202);
    await eventually(
      async () => hooks.on('/rotating'),
      (r) => r.length === 2,
      'signed for the new secret',
    );
    expect(hooks.on('/rotating').map((r) => r.verified)).toEqual([true, true]);

    await ok('POST', `/api/v1/notification-channels/${ch.id}/rotate-secret`, { overlap_hours: 0 }, 200);
    hooks.secrets.set('/rotating', rotated.secret);
    await ok('POST', `/api/v1/notification-channels/${ch.id}/test`, undefined, 202);
    const last = await eventually(
      async () => hooks.on('/rotating'),
      (r) => r.length === 3,
      'after the overlap',
    );
    expect(last[2]!.verified).toBe(false);
  }, 120_000);

  it('shows a chat URL masked, keeps it when the answer is sent back, and tests a channel still disabled', async () => {
    const created = await ok<Json>(
      'POST',
      '/api/v1/notification-channels',
      { client_id: clientId, kind: 'chat', name: 'ops room', url: `${chat.url}/room-secret-1234`, enabled: false },
      201,
    );
    expect(created.url).toBe(`${chat.url}/…1234`);
    const renamed = await ok<Json>(
      'PUT',
      `/api/v1/notification-channels/${String(created.id)}`,
      { ...created, name: 'ops' },
      200,
    );
    expect(renamed).toMatchObject({ name: 'ops', url: `${chat.url}/…1234`, enabled: false });
    await ok('POST', `/api/v1/notification-channels/${String(created.id)}/test`, undefined, 202);
    const [m] = await eventually(
      async () => chat.on('/room-secret-1234'),
      (l) => l.length === 1,
      'the test at the kept URL',
    );
    expect(m!.text).toContain('Test notification for the channel “ops”');
  });

  it('refuses targets that do not fit the kind, and URLs the rules forbid', async () => {
    const post = (body: Json) =>
      call('POST', '/api/v1/notification-channels', { client_id: clientId, name: 'x', ...body });
    for (const [body, message] of [
      [{ kind: 'email' }, /addresses/],
      [{ kind: 'email', addresses: ['not an address'] }, /addresses/],
      [{ kind: 'chat' }, /url/],
      [{ kind: 'webhook', url: 'ftp://example.com/hook' }, /http or https/],
      [{ kind: 'chat', url: 'https://hooks.example.com/x', addresses: ['a@example.com'] }, /addresses/],
    ] as const) {
      const res = await post(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.message).toMatch(message);
    }
  });
});

describe('rules', () => {
  it('notifies once when the agent stays offline past the rule’s minutes, and once when it is back', async () => {
    const hook = await webhookChannel('/offline');
    const room = await chatChannel('/offline');
    const mail = (
      await ok<{ id: string }>(
        'POST',
        '/api/v1/notification-channels',
        { client_id: clientId, kind: 'email', name: 'on-call mail', addresses: [`oncall-${sys.tag}@example.com`] },
        201,
      )
    ).id;
    const rule = await ok<{ id: string; offline_minutes: number }>(
      'POST',
      '/api/v1/notification-rules',
      {
        client_id: clientId,
        environment_id: envId,
        name: 'agents down',
        event: 'agent_offline',
        severity: 'critical',
        offline_minutes: 0.05,
        steps: [{ after_minutes: 0, channel_ids: [hook.id, room, mail] }],
      },
      201,
    );
    expect(rule.offline_minutes).toBe(0.05);

    await agentGoesOffline();
    // Nothing before the rule's minutes are up.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(hooks.on('/offline')).toHaveLength(0);
    sys.clock.advance(3_500);
    const [firing] = await eventually(
      async () => hooks.on('/offline'),
      (r) => r.length >= 1,
      'the offline notification',
      60_000,
    );
    expect(firing).toMatchObject({
      verified: true,
      body: { type: 'notification.firing', data: { severity: 'critical', status: 'firing' } },
    });
    expect(String(firing!.body.data.title)).toContain(hostname);
    await eventually(
      async () => chat.on('/offline'),
      (m) => m.length === 1,
      'the chat message',
    );
    expect(chat.on('/offline')[0]!.text).toContain(`[critical] Agent offline`);
    const link = await smtp.link(
      `oncall-${sys.tag}@example.com`,
      /https:\/\/\S+\/notifications\/acknowledge\?token=\S+/,
    );
    expect(link).toContain('https://console.example.test/notifications/acknowledge?token=');

    await agentComesBack();
    const both = await eventually(
      async () => hooks.on('/offline'),
      (r) => r.length >= 2,
      'the resolved notification',
      60_000,
    );
    expect(both[1]!.body).toMatchObject({ type: 'notification.resolved', data: { status: 'resolved' } });
    await eventually(
      async () => chat.on('/offline'),
      (m) => m.length === 2,
      'the resolved chat message',
    );
    await new Promise((r) => setTimeout(r, 1_500));
    expect(hooks.on('/offline').map((h) => h.body.type)).toEqual(['notification.firing', 'notification.resolved']);

    const [n] = await ok<{ status: string; count: number; suppressed: boolean }[]>(
      'GET',
      `/api/v1/notifications?client_id=${clientId}&host_id=${hostId}`,
      undefined,
      200,
    );
    expect(n).toMatchObject({ status: 'resolved', count: 1, suppressed: false });

    // In a maintenance window over the host: neither arrives; both are recorded as suppressed.
    const start = new Date(sys.clock.now() - 60_000).toISOString().slice(0, 16);
    await ok(
      'POST',
      '/api/v1/maintenance-windows',
      { client_id: clientId, host_id: hostId, name: 'patching', starts_at: start, duration_minutes: 60 },
      201,
    );
    await agentGoesOffline();
    sys.clock.advance(3_500);
    const held = await eventually(
      () =>
        ok<{ status: string; suppressed: boolean }[]>(
          'GET',
          `/api/v1/notifications?client_id=${clientId}&host_id=${hostId}`,
          undefined,
          200,
        ),
      (l) => l.length === 2 && l[0]!.suppressed,
      'the suppressed notification',
      60_000,
    );
    expect(held[0]).toMatchObject({ status: 'firing', suppressed: true });
    await agentComesBack();
    await eventually(
      () =>
        ok<{ status: string }[]>(
          'GET',
          `/api/v1/notifications?client_id=${clientId}&host_id=${hostId}`,
          undefined,
          200,
        ),
      (l) => l[0]!.status === 'resolved',
      'resolved in the window',
      60_000,
    );
    const log = await eventually(
      () =>
        ok<{ kind: string; status: string; reason: string | null }[]>(
          'GET',
          `/api/v1/notification-channels/${hook.id}/deliveries`,
          undefined,
          200,
        ),
      (l) => l.filter((d) => d.status === 'suppressed').length === 2,
      'both suppressed in the log',
    );
    expect(
      log
        .filter((d) => d.status === 'suppressed')
        .map((d) => d.kind)
        .sort(),
    ).toEqual(['firing', 'resolved']);
    expect(log.find((d) => d.status === 'suppressed' && d.kind === 'firing')!.reason).toContain('“patching”');
    expect(log.find((d) => d.status === 'suppressed' && d.kind === 'resolved')!.reason).toMatch(
      /held back by a maintenance window/,
    );
    expect(hooks.on('/offline')).toHaveLength(2);
    expect(chat.on('/offline')).toHaveLength(2);

    const timeline = await ok<{ event_type: string; title: string }[]>(
      'GET',
      `/api/v1/events/timeline?host_id=${hostId}&event_type=notification&start=${new Date(Date.now() - 86_400_000).toISOString()}&end=${new Date(sys.clock.now() + 86_400_000).toISOString()}`,
      undefined,
      200,
    );
    expect(timeline.map((t) => t.title.split(':')[0]).sort()).toEqual(
      ['Maintenance window', 'Notification held back', 'Notified', 'Resolved', 'Resolved'].sort(),
    );
    expect(timeline.find((t) => t.title.startsWith('Maintenance window'))!.title).toBe('Maintenance window: patching');

    // The window is a range note on the host's charts, read-only, for readers of notifications.
    const range = `start=${new Date(sys.clock.now() - 3_600_000).toISOString()}&end=${new Date(sys.clock.now() + 7_200_000).toISOString()}`;
    const notes = await ok<{ id: string; kind: string; text: string; timestamp: string; ends_at: string }[]>(
      'GET',
      `/api/v1/annotations?host_id=${hostId}&${range}`,
      undefined,
      200,
    );
    const band = notes.find((n) => n.kind === 'maintenance');
    expect(band).toMatchObject({ text: 'Maintenance window: patching' });
    expect(Date.parse(band!.ends_at) - Date.parse(band!.timestamp)).toBe(3_600_000);
    expect((await call('DELETE', `/api/v1/annotations/${band!.id}`)).statusCode).toBe(404);
    const chartsOnly = await userWithRole(sys, await customRole(sys, ['metrics:read']), clientId);
    const seen = await ok<{ kind: string }[]>(
      'GET',
      `/api/v1/annotations?host_id=${hostId}&${range}`,
      undefined,
      200,
      chartsOnly.token,
    );
    expect(seen.some((n) => n.kind === 'maintenance')).toBe(false);
  }, 300_000);

  it('escalates an alert nobody acknowledges; the signed link acknowledges and stops the next step', async () => {
    const hook = await webhookChannel('/alert');
    const room = await chatChannel('/escalation');
    await ok(
      'POST',
      '/api/v1/notification-rules',
      {
        client_id: clientId,
        name: 'cpu',
        event: 'alert',
        severity: 'critical',
        matchers: [
          { label: 'alertname', op: '=', value: 'HighCPULoad' },
          { label: 'team', op: '=~', value: 'plat.*' },
        ],
        steps: [
          { after_minutes: 0, channel_ids: [hook.id] },
          { after_minutes: 0.05, channel_ids: [room] },
        ],
      },
      201,
    );
    // A rule whose matchers do not hold stays quiet.
    const quiet = await webhookChannel('/quiet');
    await ok(
      'POST',
      '/api/v1/notification-rules',
      {
        client_id: clientId,
        name: 'db only',
        event: 'alert',
        matchers: [{ label: 'job', op: '=', value: 'postgres' }],
        steps: [{ after_minutes: 0, channel_ids: [quiet.id] }],
      },
      201,
    );

    const first = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prometheus' });
    expectStatus(await deliver(sys, first.path, fixture('alertmanager/firing.json')), 202);
    await eventually(
      async () => hooks.on('/alert'),
      (r) => r.length === 1,
      'the alert notification',
      60_000,
    );
    sys.clock.advance(3_500);
    const [escalated] = await eventually(
      async () => chat.on('/escalation'),
      (m) => m.length === 1,
      'step 2',
      60_000,
    );
    expect(escalated!.text).toContain('Escalated (step 2');

    const second = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prometheus 2' });
    expectStatus(await deliver(sys, second.path, fixture('alertmanager/firing.json')), 202);
    const got = await eventually(
      async () => hooks.on('/alert'),
      (r) => r.length === 2,
      'the second alert',
      60_000,
    ).catch(async (err: unknown) => {
      // Where it stopped: the notifications of the client, and what the channel's log holds.
      const notes = await call('GET', `/api/v1/notifications?client_id=${clientId}`);
      const log = await call('GET', `/api/v1/notification-channels/${hook.id}/deliveries`);
      throw new Error(`${String(err)}\nnotifications: ${notes.body}\ndeliveries: ${log.body}`, { cause: err });
    });
    const url = new URL(String(got[1]!.body.data.acknowledge_url));
    const token = url.searchParams.get('token')!;
    const acked = await ok<{ acknowledged_now: boolean; notification_id: string }>(
      'POST',
      '/api/v1/notifications/acknowledge-link',
      { token },
      200,
      '',
    );
    expect(acked.acknowledged_now).toBe(true);
    expect(
      (await ok<{ acknowledged_now: boolean }>('POST', '/api/v1/notifications/acknowledge-link', { token }, 200, ''))
        .acknowledged_now,
    ).toBe(false);
    const forged = await call(
      'POST',
      '/api/v1/notifications/acknowledge-link',
      { token: `${token.slice(0, -2)}xx` },
      '',
    );
    expect(forged.statusCode).toBe(400);
    sys.clock.advance(3_500);
    await new Promise((r) => setTimeout(r, 5_000));
    expect(chat.on('/escalation')).toHaveLength(1);
    const n = await ok<{ acknowledged_by: string; step: number }>(
      'GET',
      `/api/v1/notifications/${acked.notification_id}`,
      undefined,
      200,
    );
    expect(n).toMatchObject({ acknowledged_by: 'a signed acknowledgement link', step: 0 });
    expect(hooks.on('/quiet')).toHaveLength(0);

    expectStatus(await deliver(sys, first.path, fixture('alertmanager/resolved.json')), 202);
    const all = await eventually(
      async () => hooks.on('/alert'),
      (r) => r.length === 3,
      'the resolution',
      60_000,
    );
    expect(all[2]!.body.type).toBe('notification.resolved');
  }, 300_000);

  it('refuses fields that do not fit the event, channels of another client, and bad windows', async () => {
    const hook = await webhookChannel('/refusals');
    const base = { client_id: clientId, name: 'r', steps: [{ after_minutes: 0, channel_ids: [hook.id] }] };
    for (const [body, message] of [
      [{ ...base, event: 'agent_offline', matchers: [{ label: 'a', op: '=', value: 'b' }] }, /matchers/],
      [{ ...base, event: 'alert', offline_minutes: 5 }, /offline_minutes/],
      [{ ...base, event: 'alert', matchers: [{ label: 'a', op: '=~', value: '(' }] }, /regular expression/],
      [{ ...base, event: 'alert', steps: [{ after_minutes: 3, channel_ids: [hook.id] }] }, /first step/],
      [{ ...base, event: 'deploy_failed', host_id: hostId }, /not to a host/],
      [{ ...base, event: 'alert', sla_warn_minutes: 5 }, /^sla_warn_minutes: only an sla_breach rule/],
      [{ ...base, event: 'sla_breach', sla_warn_minutes: 0 }, /sla_warn_minutes/],
      [{ ...base, event: 'sla_breach', audit_actions: ['role.created'] }, /^audit_actions: only an audit rule/],
      [{ ...base, event: 'alert', audit_global: true }, /^audit_global: only an audit rule/],
      [{ ...base, event: 'audit', audit_actions: ['Role Created'] }, /audit_actions.*must be an audit action/],
      [{ ...base, event: 'audit', audit_actions: ['role.created'], environment_id: envId }, /^environment_id: audit/],
      [{ ...base, event: 'invoice_review', host_id: hostId }, /^host_id: invoice_review events belong to a client/],
    ] as const) {
      const res = await call('POST', '/api/v1/notification-rules', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.message).toMatch(message);
    }
    const window = { client_id: clientId, name: 'w', starts_at: '2026-03-01T02:00', duration_minutes: 120 };
    for (const [body, message] of [
      [{ ...window, timezone: 'Mars/Olympus' }, /time zone/],
      [{ ...window, rrule: 'FREQ=SECONDLY' }, /too frequent/],
      [{ ...window, rrule: 'FREQ=WEEKLY;BYDAY=XX' }, /BYDAY/],
      [{ ...window, starts_at: '2026-02-30T02:00' }, /starts_at/],
      [{ ...window, rrule: 'FREQ=HOURLY;INTERVAL=2;BYHOUR=1' }, /INTERVAL/],
      [{ ...window, rrule: 'FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30' }, /never occurs/],
    ] as const) {
      const res = await call('POST', '/api/v1/maintenance-windows', body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.message).toMatch(message);
    }
  });

  it('a recurring Sunday 02:00–04:00 window in Europe/Berlin keeps its local time across the change to summer time', async () => {
    const w = await ok<{ id: string }>(
      'POST',
      '/api/v1/maintenance-windows',
      {
        client_id: clientId,
        name: 'sunday patching',
        starts_at: '2026-03-01T02:00',
        timezone: 'Europe/Berlin',
        duration_minutes: 120,
        rrule: 'FREQ=WEEKLY;BYDAY=SU',
      },
      201,
    );
    const occ = await ok<{ start: string; end: string }[]>(
      'GET',
      `/api/v1/maintenance-windows/${w.id}/occurrences?from=2026-03-21T00:00:00Z&to=2026-04-06T00:00:00Z`,
      undefined,
      200,
    );
    expect(occ).toEqual([
      { start: '2026-03-22T01:00:00.000Z', end: '2026-03-22T03:00:00.000Z' },
      // 02:00 does not exist on 29 March: the window starts at 03:00 CEST and ends at 04:00 CEST.
      { start: '2026-03-29T01:00:00.000Z', end: '2026-03-29T02:00:00.000Z' },
      { start: '2026-04-05T00:00:00.000Z', end: '2026-04-05T02:00:00.000Z' },
    ]);
  });
});

describe('service-desk SLAs, invoice reviews and audit actions', () => {
  const titles = (path: string): string[] => hooks.on(path).map((r) => String(r.body.data.title));

  it('warns before a running SLA cycle breaches, tells the breach, and resolves both when it is met; a paused cycle stays quiet', async () => {
    const hook = await webhookChannel('/sla');
    const rule = await ok<{ id: string; sla_warn_minutes: number }>(
      'POST',
      '/api/v1/notification-rules',
      {
        client_id: clientId,
        name: 'sla',
        event: 'sla_breach',
        severity: 'critical',
        sla_warn_minutes: 0.05,
        steps: [{ after_minutes: 0, channel_ids: [hook.id] }],
      },
      201,
    );
    expect(rule.sla_warn_minutes).toBe(0.05);
    // Its author must read the client's service desk.
    const writer = await userWithRole(
      sys,
      await customRole(sys, ['notifications:read', 'notifications:write']),
      clientId,
    );
    const refused = await call(
      'POST',
      '/api/v1/notification-rules',
      { client_id: clientId, name: 'x', event: 'sla_breach', steps: [{ after_minutes: 0, channel_ids: [hook.id] }] },
      writer.token,
    );
    expect(refused.json().error.message).toBe('missing permission servicedesk:read on this client');
    const t0 = sys.clock.now();
    const sla = (
      issue: string,
      state: 'ongoing' | 'paused' | 'breached' | 'met',
      breachAt: number | null,
      at: number,
    ) =>
      publishEvent(
        sys.nc,
        'svc.evt.servicedesk.sla',
        {
          issue_key: issue,
          summary: `Printer on fire ${sys.tag}`,
          client_ids: [clientId],
          metric: 'resolution',
          state,
          breach_at: breachAt === null ? null : new Date(breachAt).toISOString(),
          at: new Date(at).toISOString(),
        },
        { msgId: `test-sla:${sys.tag}:${issue}:${state}:${at}` },
      );
    const issue = `SLA${sys.tag
      .replace(/[^A-Za-z0-9]/g, '')
      .toUpperCase()
      .slice(0, 6)}-1`;
    const paused = issue.replace(/-1$/, '-2');
    await sla(issue, 'ongoing', t0 + 6_000, t0);
    await sla(paused, 'ongoing', t0 + 6_000, t0);
    await sla(paused, 'paused', null, t0 + 1);
    sys.clock.advance(3_500);
    await eventually(
      async () => titles('/sla'),
      (t) => t.length === 1,
      'the SLA warning',
      60_000,
    );
    expect(titles('/sla')[0]).toMatch(
      new RegExp(`^SLA about to breach at .* UTC: ${issue} resolution \\(Printer on fire`),
    );
    sys.clock.advance(3_000);
    const told = await eventually(
      async () => titles('/sla'),
      (t) => t.length === 3,
      'the breach',
      60_000,
    );
    expect(told.slice(1).sort()).toEqual(
      [`SLA breached: ${issue} resolution (Printer on fire ${sys.tag})`, `Resolved: ${told[0]} (breached)`].sort(),
    );
    await sla(issue, 'met', null, t0 + 7_000);
    const all = await eventually(
      async () => titles('/sla'),
      (t) => t.length === 4,
      'the resolution',
      60_000,
    );
    expect(all[3]).toBe(`Resolved: SLA breached: ${issue} resolution (Printer on fire ${sys.tag}) (the SLA was met)`);
    expect(all.filter((t) => t.includes(paused))).toEqual([]);
    // A change older than the stored one (out of order, or redelivered) opens nothing.
    await sla(issue, 'breached', t0 + 6_000, t0 + 6_500);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(titles('/sla')).toHaveLength(4);
    expect(
      await sys.sql(`SELECT state FROM notification_sla_states WHERE issue_key = ? AND metric = 'resolution'`, [issue]),
    ).toEqual([{ state: 'met' }]);
    await ok('DELETE', `/api/v1/notification-rules/${rule.id}`, undefined, 204);
  });

  it('tells of an invoice waiting for review, and resolves it naming the review; the rule needs invoices:read', async () => {
    const hook = await webhookChannel('/invoice');
    const body = {
      client_id: clientId,
      name: 'invoices',
      event: 'invoice_review',
      steps: [{ after_minutes: 0, channel_ids: [hook.id] }],
    };
    const writer = await userWithRole(
      sys,
      await customRole(sys, ['notifications:read', 'notifications:write']),
      clientId,
    );
    const refused = await call('POST', '/api/v1/notification-rules', body, writer.token);
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().error.message).toBe('missing permission invoices:read on this client');
    const placed = await call('POST', '/api/v1/notification-rules', { ...body, environment_id: envId });
    expect(placed.statusCode).toBe(400);
    const rule = await ok<{ id: string }>('POST', '/api/v1/notification-rules', body, 201);

    const invoiceId = randomUUID();
    const review = (status: 'needs_review' | 'approved', version: number, by: string, comment: string | null) =>
      publishEvent(
        sys.nc,
        'svc.evt.invoice.review',
        {
          invoice_id: invoiceId,
          display_number: `INV-${sys.tag}`,
          application_key: 'app-1',
          customer_key: 'acme',
          period_start: '2026-11-01',
          period_end: '2026-11-30',
          total_amount: '1234.50',
          currency: 'EUR',
          status,
          previous_status: status === 'needs_review' ? 'draft' : 'needs_review',
          version,
          by,
          comment,
          at: new Date(sys.clock.now()).toISOString(),
        },
        { msgId: `test-invoice:${invoiceId}:${version}` },
      );
    await review('needs_review', 2, 'ann@example.com', null);
    const [first] = await eventually(
      async () => titles('/invoice'),
      (t) => t.length === 1,
      'the review notice',
      60_000,
    );
    expect(first).toBe(`Invoice INV-${sys.tag} waiting for review: acme, 1234.50 EUR (2026-11-01 – 2026-11-30)`);
    await review('approved', 3, 'rev@example.com', 'fine');
    const both = await eventually(
      async () => titles('/invoice'),
      (t) => t.length === 2,
      'the review outcome',
      60_000,
    );
    expect(both[1]).toBe(`Resolved: ${first} (approved by rev@example.com: fine)`);

    // Another invoice waits; the rule then changes its event: what it had open ends with the old event, unsent.
    const waiting = randomUUID();
    await publishEvent(
      sys.nc,
      'svc.evt.invoice.review',
      {
        invoice_id: waiting,
        display_number: `INV-${sys.tag}-2`,
        application_key: 'app-1',
        customer_key: 'acme',
        period_start: '2026-11-01',
        period_end: '2026-11-30',
        total_amount: '10.00',
        currency: 'EUR',
        status: 'needs_review',
        previous_status: 'draft',
        version: 2,
        by: 'ann@example.com',
        comment: null,
        at: new Date(sys.clock.now()).toISOString(),
      },
      { msgId: `test-invoice:${waiting}:2` },
    );
    await eventually(
      async () => titles('/invoice'),
      (t) => t.length === 3,
      'the second review notice',
      60_000,
    );
    await ok(
      'PUT',
      `/api/v1/notification-rules/${rule.id}`,
      { ...body, event: 'audit', audit_actions: ['role.created'] },
      200,
    );
    expect(
      await sys.sql(`SELECT status FROM notifications WHERE rule_id = ? AND group_key = ?`, [
        rule.id,
        `invoice:${waiting}`,
      ]),
    ).toEqual([{ status: 'resolved' }]);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(titles('/invoice')).toHaveLength(3);
    await ok('DELETE', `/api/v1/notification-rules/${rule.id}`, undefined, 204);
  });

  it('tells of chosen audit actions, counting those within the grouping window; global entries are a super admin’s', async () => {
    const hook = await webhookChannel('/audit');
    const body = {
      client_id: clientId,
      name: 'new channels',
      event: 'audit',
      audit_actions: ['notification_channel.created'],
      group_window_minutes: 0.05,
      steps: [{ after_minutes: 0, channel_ids: [hook.id] }],
    };
    const writer = await userWithRole(
      sys,
      await customRole(sys, ['notifications:read', 'notifications:write', 'audit:read']),
      clientId,
    );
    const global = await call('POST', '/api/v1/notification-rules', { ...body, audit_global: true }, writer.token);
    expect(global.statusCode, global.body).toBe(403);
    const none = await call('POST', '/api/v1/notification-rules', { ...body, audit_actions: [] });
    expect(none.json().error.message).toBe('audit_actions: an audit rule names at least one action');
    const rule = await ok<{ id: string; audit_actions: string[] }>(
      'POST',
      '/api/v1/notification-rules',
      body,
      201,
      writer.token,
    );
    expect(rule.audit_actions).toEqual(['notification_channel.created']);

    await webhookChannel('/audit-a');
    const [first] = await eventually(
      async () => titles('/audit'),
      (t) => t.length === 1,
      'the audit notice',
      60_000,
    );
    expect(first).toMatch(/^Audit: notification_channel\.created by .+ \(notification_channel [0-9a-f-]{36}\)$/);
    await webhookChannel('/audit-b');
    await webhookChannel('/audit-c');
    await eventually(
      () =>
        ok<{ event: string; count: number }[]>(
          'GET',
          `/api/v1/notifications?client_id=${clientId}&status=firing`,
          undefined,
          200,
        ),
      (l) => l.some((n) => n.event === 'audit' && n.count === 3),
      'three entries counted into one notification',
      60_000,
    );
    expect(titles('/audit')).toHaveLength(1);
    // The window over, the notification closes without a message; the next entry tells again.
    sys.clock.advance(3_500);
    await eventually(
      () => ok<{ event: string }[]>('GET', `/api/v1/notifications?client_id=${clientId}&status=firing`, undefined, 200),
      (l) => !l.some((n) => n.event === 'audit'),
      'the audit notification closed',
      60_000,
    );
    await webhookChannel('/audit-d');
    await eventually(
      async () => titles('/audit'),
      (t) => t.length === 2,
      'the next audit notice',
      60_000,
    );
    expect(hooks.on('/audit').map((r) => r.body.type)).toEqual(['notification.firing', 'notification.firing']);
    // A PUT is checked as a create: global entries stay a super admin's.
    const put = await call(
      'PUT',
      `/api/v1/notification-rules/${rule.id}`,
      { ...body, audit_global: true },
      writer.token,
    );
    expect(put.statusCode, put.body).toBe(403);
    await ok('DELETE', `/api/v1/notification-rules/${rule.id}`, undefined, 204);

    // Service-account keys: an entry about this client alone is told; one that also names another client is not (the
    // audit log shows it only to readers of both).
    const keysHook = await webhookChannel('/audit-keys');
    const keys = await ok<{ id: string }>(
      'POST',
      '/api/v1/notification-rules',
      {
        ...body,
        name: 'keys',
        audit_actions: ['service_account.key_created'],
        group_window_minutes: 0,
        steps: [{ after_minutes: 0, channel_ids: [keysHook.id] }],
      },
      201,
      writer.token,
    );
    const role = await customRole(sys, ['hosts:read']);
    const other = (await createClient(sys)).id;
    const account = (scope: string[], name: string) =>
      ok('POST', '/api/v1/service-accounts', { name: `${name}-${sys.tag}`, role_id: role, client_scope: scope }, 201);
    await account([clientId, other], 'both');
    await account([clientId], 'mine');
    const [told] = await eventually(
      async () => titles('/audit-keys'),
      (t) => t.length === 1,
      'the key notice',
      60_000,
    );
    expect(told).toMatch(/^Audit: service_account\.key_created by .+ \(service_account [0-9a-f-]{36}\)$/);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(titles('/audit-keys')).toHaveLength(1);

    // Its notifications are read with audit:read too: notifications:read alone sees none of them.
    const reader = await userWithRole(sys, await customRole(sys, ['notifications:read']), clientId);
    const mine = await ok<{ id: string; event: string }[]>(
      'GET',
      `/api/v1/notifications?client_id=${clientId}&per_page=100`,
      undefined,
      200,
    );
    const audits = mine.filter((n) => n.event === 'audit');
    expect(audits.length).toBeGreaterThan(0);
    const seen = await ok<{ event: string }[]>(
      'GET',
      `/api/v1/notifications?client_id=${clientId}&per_page=100`,
      undefined,
      200,
      reader.token,
    );
    expect(seen.filter((n) => n.event === 'audit')).toEqual([]);
    expect((await call('GET', `/api/v1/notifications/${audits[0]!.id}`, undefined, reader.token)).statusCode).toBe(404);
    expect((await call('GET', `/api/v1/notifications/${audits[0]!.id}`, undefined, writer.token)).statusCode).toBe(200);
    await ok('DELETE', `/api/v1/notification-rules/${keys.id}`, undefined, 204);
  });
});

describe('tenant boundaries', () => {
  it('the source permissions hold under parallel requests: SLA, invoice and audit rules, and retargeting a global-audit channel', async () => {
    const hook = await webhookChannel('/guarded');
    const writer = await userWithRole(
      sys,
      await customRole(sys, ['notifications:read', 'notifications:write']),
      clientId,
    );
    const name = `guarded ${sys.tag}`;
    const kinds = [
      { event: 'sla_breach' },
      { event: 'invoice_review' },
      { event: 'audit', audit_actions: ['role.created'] },
    ];
    const refused = await Promise.all(
      kinds.flatMap((k) =>
        Array.from({ length: 6 }, () =>
          call(
            'POST',
            '/api/v1/notification-rules',
            { client_id: clientId, name, steps: [{ after_minutes: 0, channel_ids: [hook.id] }], ...k },
            writer.token,
          ),
        ),
      ),
    );
    expect(refused.map((r) => r.statusCode)).toEqual(Array(18).fill(403));
    expect(await sys.sql(`SELECT id FROM notification_rules WHERE name = ?`, [name])).toEqual([]);

    // A super admin's rule of global audit entries on the channel: the client's writer may not send it elsewhere,
    // however many times at once; the super admin may.
    const global = await ok<{ id: string }>(
      'POST',
      '/api/v1/notification-rules',
      {
        client_id: clientId,
        name: `global ${sys.tag}`,
        event: 'audit',
        audit_actions: ['role.created'],
        audit_global: true,
        steps: [{ after_minutes: 0, channel_ids: [hook.id] }],
      },
      201,
    );
    const moves = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call(
          'PUT',
          `/api/v1/notification-channels/${hook.id}`,
          { name: '/guarded', url: `${hooks.url}/stolen-${i}` },
          writer.token,
        ),
      ),
    );
    expect(moves.map((r) => r.statusCode)).toEqual(Array(8).fill(403));
    expect(moves[0]!.json().error.message).toMatch(/only a super admin may change where it sends/);
    expect(await sys.sql(`SELECT url FROM notification_channels WHERE id = ?`, [hook.id])).toEqual([
      { url: `${hooks.url}/guarded` },
    ]);
    // A rename is not a move: the writer may still do that.
    expectStatus(await call('PUT', `/api/v1/notification-channels/${hook.id}`, { name: 'renamed' }, writer.token), 200);
    await ok('PUT', `/api/v1/notification-channels/${hook.id}`, { name: 'renamed', url: `${hooks.url}/moved` }, 200);
    await ok('DELETE', `/api/v1/notification-rules/${global.id}`, undefined, 204);
  });

  it('another client’s reader sees none of this client’s channels, rules or notifications, even in parallel', async () => {
    const hook = await webhookChannel('/tenant');
    const other = (await createClient(sys)).id;
    const reader = await userWithRole(sys, await customRole(sys, ['notifications:read', 'notifications:write']), other);
    const readOnly = await userWithRole(sys, await customRole(sys, ['notifications:read']), clientId);
    const results = await Promise.all([
      ...Array.from({ length: 8 }, () =>
        call('GET', `/api/v1/notification-channels/${hook.id}`, undefined, reader.token),
      ),
      ...Array.from({ length: 8 }, () =>
        call(
          'POST',
          '/api/v1/notification-rules',
          { client_id: other, name: 'steal', event: 'alert', steps: [{ after_minutes: 0, channel_ids: [hook.id] }] },
          reader.token,
        ),
      ),
      ...Array.from({ length: 4 }, () =>
        call('POST', `/api/v1/notification-channels/${hook.id}/test`, undefined, reader.token),
      ),
    ]);
    expect(results.map((r) => r.statusCode)).toEqual(Array(20).fill(404));
    expect(await sys.sql(`SELECT id FROM notification_rules WHERE client_id = ?`, [other])).toEqual([]);
    const listed = await ok<{ client_id: string }[]>(
      'GET',
      '/api/v1/notification-channels?per_page=100',
      undefined,
      200,
      reader.token,
    );
    expect(listed).toEqual([]);
    expect((await call('GET', `/api/v1/notifications?client_id=${clientId}`, undefined, reader.token)).statusCode).toBe(
      404,
    );

    // notifications:read alone reads, and may not change anything.
    expect((await call('GET', `/api/v1/notification-channels/${hook.id}`, undefined, readOnly.token)).statusCode).toBe(
      200,
    );
    const writes = await Promise.all([
      call(
        'POST',
        '/api/v1/notification-channels',
        { client_id: clientId, kind: 'chat', name: 'x', url: 'https://x.example.com' },
        readOnly.token,
      ),
      call('DELETE', `/api/v1/notification-channels/${hook.id}`, undefined, readOnly.token),
      call('POST', `/api/v1/notification-channels/${hook.id}/rotate-secret`, {}, readOnly.token),
    ]);
    expect(writes.map((r) => r.statusCode)).toEqual([403, 403, 403]);
    expect(hooks.on('/tenant')).toHaveLength(0);
  });
});
