import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { twilioSignature } from '../../actors/events/voice/twilio.ts';
import { api, expectStatus, waitForAudit } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import {
  createEnvironment,
  createHost,
  createReceiver,
  deliver,
  eventually,
  fixture,
  PUBLIC_URL,
  startEventsSystem,
  type IssuedReceiver,
} from './support.ts';

/**
 * Paging by phone against a local HTTP peer that plays the voice provider: its REST API for placing calls, and its
 * side of the callbacks (fetching TwiML, sending the digit, reporting the outcome), signed the way it signs them.
 */

const ACCOUNT_SID = `AC${randomBytes(16).toString('hex')}`;
const AUTH_TOKEN = randomBytes(16).toString('hex');
const FROM = '+15005550006';
const ONCALL = '+15551230001';

interface PlacedCall {
  sid: string;
  auth: string | undefined;
  form: Record<string, string>;
}

/** The provider's REST API: `POST /2010-04-01/Accounts/{sid}/Calls.json`, basic auth, form body, 201 with the call. */
class FakeVoiceProvider {
  readonly calls: PlacedCall[] = [];
  failNext = 0;
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    if (req.method !== 'POST' || req.url !== `/2010-04-01/Accounts/${ACCOUNT_SID}/Calls.json`) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 20404, message: 'The requested resource was not found', status: 404 }));
      return;
    }
    if (req.headers.authorization !== `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`) {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 20003, message: 'Authenticate', status: 401 }));
      return;
    }
    if (this.failNext > 0) {
      this.failNext--;
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 20500, message: 'Service unavailable', status: 503 }));
      return;
    }
    const form = Object.fromEntries(new URLSearchParams(body));
    const sid = `CA${randomBytes(16).toString('hex')}`;
    this.calls.push({ sid, auth: req.headers.authorization, form });
    res.writeHead(201, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        sid,
        account_sid: ACCOUNT_SID,
        to: form.To,
        from: form.From,
        status: 'queued',
        direction: 'outbound-api',
        api_version: '2010-04-01',
      }),
    );
  }

  stop(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

let sys: TestSystem;
let root: string;
let provider: FakeVoiceProvider;
let clientId: string;
let envId: string;
let hostId: string;
let source: IssuedReceiver;

/** The provider calling one of our callbacks: form-encoded, signed over the public URL and the parameters. */
function callback(url: string, params: Record<string, string>, opts: { signature?: string; signedUrl?: string } = {}) {
  const pairs = Object.entries(params);
  const signature = opts.signature ?? twilioSignature(AUTH_TOKEN, opts.signedUrl ?? url, pairs);
  return sys.http({
    method: 'POST',
    url: url.slice(PUBLIC_URL.length),
    payload: new URLSearchParams(params).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': signature,
      'user-agent': 'TwilioProxy/1.1',
    },
  });
}

const callParams = (call: PlacedCall, extra: Record<string, string> = {}): Record<string, string> => ({
  AccountSid: ACCOUNT_SID,
  ApiVersion: '2010-04-01',
  CallSid: call.sid,
  CallStatus: 'in-progress',
  Called: call.form.To!,
  Caller: FROM,
  Direction: 'outbound-api',
  From: FROM,
  To: call.form.To!,
  ...extra,
});

/** Our record of a call, once the provider's answer (its SID) is stored. */
const callRow = (sid: string) =>
  eventually(
    () =>
      sys.sql<{ id: string; alert_group_id: string }>(
        `SELECT id, alert_group_id FROM voice_calls WHERE provider_sid = ?`,
        [sid],
      ),
    (r) => r.length === 1,
    'the call recorded',
  );

/** A critical firing group under a fresh group key (so each test pages anew). */
function criticalFiring(key: string, severity = 'critical'): string {
  const n = JSON.parse(fixture('alertmanager/firing.json').toString('utf8')) as {
    groupKey: string;
    commonLabels: Record<string, string>;
    alerts: { labels: Record<string, string> }[];
  };
  n.groupKey = key;
  n.commonLabels.severity = severity;
  n.alerts[0]!.labels.severity = severity;
  return JSON.stringify(n);
}

beforeAll(async () => {
  provider = new FakeVoiceProvider();
  const apiUrl = await provider.start();
  ({ sys, root } = await startEventsSystem({
    SVC_TWILIO_ACCOUNT_SID: ACCOUNT_SID,
    SVC_TWILIO_AUTH_TOKEN: AUTH_TOKEN,
    SVC_TWILIO_FROM: FROM,
    SVC_TWILIO_API_URL: apiUrl,
    SVC_TWILIO_MAX_ATTEMPTS: '2',
    SVC_TWILIO_RETRY_DELAY_SECONDS: '0',
  }));
  clientId = (await createClient(sys)).id;
  envId = await createEnvironment(sys, clientId);
  hostId = await createHost(sys, clientId, envId, 'web-1.northwind.internal');
  source = await createReceiver(sys, root, 'alert-sources', {
    client_id: clientId,
    name: 'prometheus',
    oncall_phone: ONCALL,
  });
});
afterAll(async () => {
  await sys?.stop();
  await provider?.stop();
});

describe('paging by phone', () => {
  it('calls the on-call number when a critical group fires; the call reads the alert and 1 acknowledges it', async () => {
    expectStatus(await deliver(sys, source.path, criticalFiring('page-1')), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === 1,
      'the call placed through the REST API',
    );
    const call = provider.calls[0]!;
    const [row] = await callRow(call.sid);
    expect(call.form).toMatchObject({
      To: ONCALL,
      From: FROM,
      Url: `${PUBLIC_URL}/api/v1/twilio/voice/twiml/${row!.id}`,
      Method: 'POST',
      StatusCallback: `${PUBLIC_URL}/api/v1/twilio/voice/status?call=${row!.id}`,
      StatusCallbackMethod: 'POST',
    });

    // The provider fetches the TwiML with a valid signature.
    const twiml = await callback(call.form.Url!, callParams(call));
    expectStatus(twiml, 200);
    expect(twiml.headers['content-type']).toContain('text/xml');
    expect(twiml.body).toContain('<Gather numDigits="1"');
    expect(twiml.body).toContain(`action="${PUBLIC_URL}/api/v1/twilio/voice/gather?call=${row!.id}"`);
    expect(twiml.body).toContain(
      'Alert: HighCPULoad. Severity critical. CPU load above 95% for 10 minutes on web-1. It is firing. Press 1 to acknowledge.',
    );

    // Another key does nothing but repeat the message.
    const gatherUrl = `${PUBLIC_URL}/api/v1/twilio/voice/gather?call=${row!.id}`;
    const two = await callback(gatherUrl, callParams(call, { Digits: '2', FinishedOnKey: '' }));
    expectStatus(two, 200);
    expect(two.body).toContain('<Redirect method="POST">');
    expect(
      (
        await sys.sql<{ acknowledged_at: string | null }>(`SELECT acknowledged_at FROM alert_groups WHERE id = ?`, [
          row!.alert_group_id,
        ])
      )[0]!.acknowledged_at,
    ).toBeNull();

    const one = await callback(gatherUrl, callParams(call, { Digits: '1', FinishedOnKey: '' }));
    expectStatus(one, 200);
    expect(one.body).toContain('Alert acknowledged');
    const [group] = await sys.sql<{ acknowledged_at: string | null; acknowledged_by: string }>(
      `SELECT acknowledged_at, acknowledged_by FROM alert_groups WHERE id = ?`,
      [row!.alert_group_id],
    );
    expect(group!.acknowledged_at).not.toBeNull();
    expect(group!.acknowledged_by).toBe(`phone:${ONCALL}`);

    // Audited, on the timeline, and shown as acknowledged on the charts.
    const audit = await waitForAudit(sys, root, { action: 'alert.acknowledged', resource_id: row!.alert_group_id });
    expect(audit.details).toMatchObject({ via: 'phone', phone: ONCALL, call_sid: call.sid });
    const timeline = await eventually(
      async () =>
        (
          await api(sys, { token: root })(
            'GET',
            `/api/v1/events/timeline?host_id=${hostId}&start=2026-11-01T00:00:00Z&end=2030-01-01T00:00:00Z&event_type=alert`,
          )
        ).json().data as { title: string; description: string }[],
      (rows) => rows.some((r) => r.title === 'Alert HighCPULoad acknowledged'),
      'acknowledgement on the timeline',
    );
    expect(timeline.find((r) => r.title === 'Alert HighCPULoad acknowledged')!.description).toContain(
      `by phone:${ONCALL}`,
    );
    const markers = await api(sys, { token: root })(
      'GET',
      `/api/v1/chart-markers?host_id=${hostId}&start=2026-11-21T00:00:00Z&end=2026-11-22T00:00:00Z&types=alerts`,
    );
    expect(
      (markers.json().data.alerts as { id: string; status: string }[]).find((a) => a.id === row!.alert_group_id)!
        .status,
    ).toBe('acknowledged');

    // The call ends; acknowledged, nobody is called again.
    expectStatus(
      await callback(
        `${PUBLIC_URL}/api/v1/twilio/voice/status?call=${row!.id}`,
        callParams(call, { CallStatus: 'completed', CallDuration: '23' }),
      ),
      204,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(provider.calls).toHaveLength(1);
  });

  it('refuses a forged, missing or misplaced signature with 403 on every callback', async () => {
    const call = provider.calls[0]!;
    const [row] = await callRow(call.sid);
    const twimlUrl = `${PUBLIC_URL}/api/v1/twilio/voice/twiml/${row!.id}`;
    const gatherUrl = `${PUBLIC_URL}/api/v1/twilio/voice/gather?call=${row!.id}`;
    const statusUrl = `${PUBLIC_URL}/api/v1/twilio/voice/status?call=${row!.id}`;
    for (const url of [twimlUrl, gatherUrl, statusUrl]) {
      const forged = await callback(url, callParams(call, { Digits: '1' }), {
        signature: twilioSignature('not-the-auth-token', url, Object.entries(callParams(call, { Digits: '1' }))),
      });
      expectStatus(forged, 403);
      expect(forged.json().error.code).toBe('forbidden');
      expectStatus(await callback(url, callParams(call), { signature: '' }), 403);
      // Signed for another URL (a replay to a different callback) or with other parameters.
      expectStatus(await callback(url, callParams(call), { signedUrl: `${url}x` }), 403);
      const signedParams = callParams(call, { Digits: '2' });
      const replayed = await sys.http({
        method: 'POST',
        url: url.slice(PUBLIC_URL.length),
        payload: new URLSearchParams(callParams(call, { Digits: '1' })).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': twilioSignature(AUTH_TOKEN, url, Object.entries(signedParams)),
        },
      });
      expectStatus(replayed, 403);
    }
    const json = await sys.http({
      method: 'POST',
      url: gatherUrl.slice(PUBLIC_URL.length),
      payload: { Digits: '1' },
      headers: { 'x-twilio-signature': 'x' },
    });
    expectStatus(json, 400);
  });

  it('calls again when a call is not answered, a bounded number of times', async () => {
    const before = provider.calls.length;
    expectStatus(await deliver(sys, source.path, criticalFiring('page-2')), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 1,
      'first call',
    );
    const first = provider.calls.at(-1)!;
    const [row] = await callRow(first.sid);
    expectStatus(await callback(first.form.StatusCallback!, callParams(first, { CallStatus: 'no-answer' })), 204);
    // A repeated status callback does not schedule a second retry.
    expectStatus(await callback(first.form.StatusCallback!, callParams(first, { CallStatus: 'no-answer' })), 204);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 2,
      'second call',
    );
    const second = provider.calls.at(-1)!;
    expect(second.form.To).toBe(ONCALL);
    // The provider sees the call before its SID is stored; a callback in between is refused as another call's.
    await callRow(second.sid);
    const attempts = await sys.sql<{ attempt: number; status: string }>(
      `SELECT attempt, status FROM voice_calls WHERE alert_group_id = ? ORDER BY attempt`,
      [row!.alert_group_id],
    );
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(attempts[0]!.status).toBe('no-answer');
    // SVC_TWILIO_MAX_ATTEMPTS=2: the second unanswered call is the last.
    expectStatus(await callback(second.form.StatusCallback!, callParams(second, { CallStatus: 'busy' })), 204);
    await new Promise((r) => setTimeout(r, 700));
    expect(provider.calls).toHaveLength(before + 2);
  });

  it('retries placing the call when the provider fails for a moment', async () => {
    const before = provider.calls.length;
    provider.failNext = 1;
    expectStatus(await deliver(sys, source.path, criticalFiring('page-3')), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 1,
      'call placed after a 503',
      15_000,
    );
  });

  it('holds a page back during a maintenance window over the client, and calls once the window is over', async () => {
    // The window runs to the end of the clock's minute, five seconds away.
    const into = sys.clock.now() % 60_000;
    sys.clock.advance((55_000 - into + 60_000) % 60_000);
    const starts = new Date(sys.clock.now()).toISOString().slice(0, 16);
    const admin = api(sys, { token: root });
    const made = await admin('POST', '/api/v1/maintenance-windows', {
      client_id: clientId,
      name: 'patch night',
      starts_at: starts,
      duration_minutes: 1,
    });
    expectStatus(made, 201);
    const before = provider.calls.length;
    try {
      expectStatus(await deliver(sys, source.path, criticalFiring('page-held')), 202);
      const [held] = await eventually(
        () =>
          sys.sql<{ title: string; description: string }>(
            `SELECT t.title, t.description FROM timeline_events t JOIN alert_groups g ON t.source_key LIKE 'page-held:' || g.id || ':%'
              WHERE g.receiver_id = ? AND g.group_key = 'page-held'`,
            [source.id],
          ),
        (r) => r.length === 1,
        'the hold on the timeline',
      );
      expect(held!.title).toBe('Page held back: HighCPULoad');
      expect(held!.description).toMatch(/^The maintenance window “patch night” holds the on-call call until /);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(provider.calls).toHaveLength(before);
      // The window over (the clock moved past it): the held page is asked again and placed, once.
      sys.clock.advance(10_000);
      await eventually(
        async () => provider.calls.length,
        (n) => n === before + 1,
        'the call after the window',
        30_000,
      );
      await new Promise((r) => setTimeout(r, 1_500));
      expect(provider.calls).toHaveLength(before + 1);
    } finally {
      expectStatus(await admin('DELETE', `/api/v1/maintenance-windows/${made.json().data.id}`), 204);
    }
  });

  it('does not call for a group that is not critical, nor for a source without an on-call number', async () => {
    const before = provider.calls.length;
    expectStatus(await deliver(sys, source.path, criticalFiring('page-warning', 'warning')), 202);
    const silent = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'no-phone' });
    expectStatus(await deliver(sys, silent.path, criticalFiring('page-nophone')), 202);
    await eventually(
      () =>
        sys.sql<{ n: number }>(
          `SELECT count(*)::int AS n FROM alert_groups WHERE (receiver_id = ? AND group_key = 'page-warning') OR (receiver_id = ? AND group_key = 'page-nophone')`,
          [source.id, silent.id],
        ),
      (r) => r[0]!.n === 2,
      'groups stored',
    );
    await new Promise((r) => setTimeout(r, 700));
    expect(provider.calls).toHaveLength(before);
  });

  it("matches a callback to its call by CallSid and AccountSid: another call's or account's callback is 403 and changes nothing", async () => {
    const before = provider.calls.length;
    expectStatus(await deliver(sys, source.path, criticalFiring('page-sid-a')), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 1,
      'the first call',
    );
    expectStatus(await deliver(sys, source.path, criticalFiring('page-sid-b')), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 2,
      'the second call',
    );
    const [a, b] = [provider.calls[before]!, provider.calls[before + 1]!];
    const [rowA] = await callRow(a.sid);
    const [rowB] = await callRow(b.sid);
    const gatherA = `${PUBLIC_URL}/api/v1/twilio/voice/gather?call=${rowA!.id}`;
    const stateOf = () =>
      sys.sql<{ id: string; digits: string | null; status: string; acknowledged_at: string | null }>(
        `SELECT c.id, c.digits, c.status, g.acknowledged_at FROM voice_calls c JOIN alert_groups g ON g.id = c.alert_group_id WHERE c.id IN (?, ?) ORDER BY c.id`,
        [rowA!.id, rowB!.id],
      );
    const untouched = await stateOf();
    expect(untouched.every((r) => r.acknowledged_at === null && r.digits === null)).toBe(true);

    // Correctly signed, but the form names call B (or another account, or no call) while the URL names call A.
    const strays: Record<string, string>[] = [
      callParams(b, { Digits: '1' }),
      callParams(a, { Digits: '1', AccountSid: `AC${randomBytes(16).toString('hex')}` }),
      Object.fromEntries(Object.entries(callParams(a, { Digits: '1' })).filter(([k]) => k !== 'CallSid')),
      Object.fromEntries(Object.entries(callParams(a, { Digits: '1' })).filter(([k]) => k !== 'AccountSid')),
    ];
    for (const params of strays) {
      const res = await callback(gatherA, params);
      expectStatus(res, 403);
      expect(res.json().error.message).toMatch(/CallSid|AccountSid/);
      expectStatus(await callback(a.form.StatusCallback!, { ...params, CallStatus: 'no-answer' }), 403);
      expectStatus(await callback(a.form.Url!, params), 403);
    }
    // Without the URL's call, the CallSid alone still needs the account.
    expectStatus(
      await callback(
        `${PUBLIC_URL}/api/v1/twilio/voice/gather`,
        callParams(a, { Digits: '1', AccountSid: `AC${randomBytes(16).toString('hex')}` }),
      ),
      403,
    );
    expect(await stateOf()).toEqual(untouched);
    await new Promise((r) => setTimeout(r, 500));
    expect(provider.calls).toHaveLength(before + 2);

    // The call's own callback still acknowledges its own group, and only that one.
    const own = await callback(gatherA, callParams(a, { Digits: '1' }));
    expectStatus(own, 200);
    expect(own.body).toContain('Alert acknowledged');
    const after = await stateOf();
    expect(after.find((r) => r.id === rowA!.id)!.acknowledged_at).not.toBeNull();
    expect(after.find((r) => r.id === rowB!.id)!.acknowledged_at).toBeNull();
  });
});

describe('a voice notification channel', () => {
  it('phones a rule’s notification; the call reads it and 1 acknowledges the notification, not the alert group', async () => {
    const phone = '+15551230777';
    const other = (await createClient(sys)).id;
    const channel = await api(sys, { token: root })('POST', '/api/v1/notification-channels', {
      client_id: other,
      kind: 'voice',
      name: 'on-call phone',
      phone,
    });
    expectStatus(channel, 201);
    const channelId = channel.json().data.id as string;
    expect(channel.json().data).toMatchObject({ kind: 'voice', phone, url: null, addresses: [] });
    const bad = await api(sys, { token: root })('POST', '/api/v1/notification-channels', {
      client_id: other,
      kind: 'voice',
      name: 'no number',
    });
    expectStatus(bad, 400);
    expect(bad.json().error.message).toMatch(/phone: a voice channel needs a phone number/);
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/notification-rules', {
        client_id: other,
        name: 'page me',
        event: 'alert',
        steps: [{ after_minutes: 0, channel_ids: [channelId] }],
      }),
      201,
    );
    // An alert source without an on-call number: the only call is the channel's.
    const quiet = await createReceiver(sys, root, 'alert-sources', { client_id: other, name: 'prometheus' });
    const before = provider.calls.length;
    expectStatus(await deliver(sys, quiet.path, criticalFiring('voice-channel-1')), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 1,
      'the notification phoned',
    );
    const call = provider.calls[before]!;
    expect(call.form.To).toBe(phone);
    const [row] = await eventually(
      () =>
        sys.sql<{ id: string; notification_id: string; alert_group_id: string | null }>(
          `SELECT id, notification_id, alert_group_id FROM voice_calls WHERE provider_sid = ?`,
          [call.sid],
        ),
      (r) => r.length === 1,
      'the call recorded',
    );
    expect(row!.alert_group_id).toBeNull();
    const twiml = await callback(call.form.Url!, callParams(call));
    expectStatus(twiml, 200);
    expect(twiml.body).toContain(
      'Notification: Alert firing: HighCPULoad (critical). Severity warning. It is still happening. Press 1 to acknowledge.',
    );
    const one = await callback(
      `${PUBLIC_URL}/api/v1/twilio/voice/gather?call=${row!.id}`,
      callParams(call, { Digits: '1' }),
    );
    expectStatus(one, 200);
    expect(one.body).toContain('Notification acknowledged');
    const n = await api(sys, { token: root })('GET', `/api/v1/notifications/${row!.notification_id}`);
    expect(n.json().data).toMatchObject({ acknowledged_by: `phone:${phone}` });
    const log = await eventually(
      async () =>
        (await api(sys, { token: root })('GET', `/api/v1/notification-channels/${channelId}/deliveries`)).json()
          .data as { status: string; id: string }[],
      (l) => l[0]?.status === 'delivered',
      'the delivery delivered',
    );
    expect(log[0]!.id).toBe(row!.id);
    // A final status is stored; no second call follows (the rule's steps are what escalates).
    expectStatus(
      await callback(
        `${PUBLIC_URL}/api/v1/twilio/voice/status?call=${row!.id}`,
        callParams(call, { CallStatus: 'no-answer' }),
      ),
      204,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    expect(provider.calls.length).toBe(before + 1);

    // A test call reads the test message; a redelivery calls again.
    const tested = await api(sys, { token: root })('POST', `/api/v1/notification-channels/${channelId}/test`);
    expectStatus(tested, 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 2,
      'the test call',
    );
    const testCall = provider.calls[before + 1]!;
    const read = await callback(testCall.form.Url!, callParams(testCall));
    expectStatus(read, 200);
    expect(read.body).toContain('Test notification for the channel “on-call phone”. It reaches you. Goodbye.');
    const testId = tested.json().data.id as string;
    await eventually(
      async () =>
        (await api(sys, { token: root })('GET', `/api/v1/notification-channels/${channelId}/deliveries`)).json()
          .data as { status: string; id: string }[],
      (l) => l.find((d) => d.id === testId)?.status === 'delivered',
      'the test delivered',
    );
    expectStatus(await api(sys, { token: root })('POST', `/api/v1/notification-deliveries/${testId}/redeliver`), 202);
    await eventually(
      async () => provider.calls.length,
      (n) => n === before + 3,
      'the redelivered call',
    );
  });
});
