import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { instanceHost, parseAlertmanager } from '../../actors/events/receivers/parse/alertmanager.ts';
import { parseArgocd } from '../../actors/events/receivers/parse/argocd.ts';
import { bodyDigest, clip, isoTime, type Delivery, type Parsed } from '../../actors/events/receivers/parse/delivery.ts';
import { parseGithub } from '../../actors/events/receivers/parse/github.ts';
import { parseGitlab } from '../../actors/events/receivers/parse/gitlab.ts';
import { verifySignature } from '../../actors/events/receivers/signatures.ts';

/**
 * The webhook parsers and signature checks on the payloads each tool sends (test/fixtures/webhooks): what a delivery
 * means, before anything is stored. Through the receivers' HTTP routes into PostgreSQL: receivers.test.ts.
 */

const fixture = (path: string): Buffer => readFileSync(join('test/fixtures/webhooks', path));
const RECEIVED = new Date('2026-11-21T17:00:00.000Z');
const delivery = (body: Buffer | string, headers: Record<string, string> = {}): Delivery => ({
  headers,
  body: Buffer.isBuffer(body) ? body : Buffer.from(body),
  receivedAt: RECEIVED,
});
const deployOf = (p: Parsed) => {
  if (p.kind !== 'deploy') throw new Error(`expected a deploy, got ${JSON.stringify(p)}`);
  return p.deploy;
};
const github = (event: string, file: string, id = 'd-1') =>
  parseGithub(delivery(fixture(`github/${file}`), { 'x-github-event': event, 'x-github-delivery': id }));
const gitlab = (event: string, file: string) =>
  parseGitlab(delivery(fixture(`gitlab/${file}`), { 'x-gitlab-event': event, 'x-gitlab-event-uuid': 'u-1' }));

describe('GitHub', () => {
  it('a published release, a tag and deployment statuses become deploys; the delivery id identifies a repeat', () => {
    const release = github('release', 'release-published.json');
    expect(release).toMatchObject({ kind: 'deploy', event: 'release', external_id: 'd-1' });
    expect(deployOf(release)).toEqual({
      event_type: 'release',
      summary: 'northwind/shop-api released v2.14.0 – faster checkout',
      app: 'northwind/shop-api',
      revision: 'v2.14.0',
      url: 'https://github.com/northwind/shop-api/releases/tag/v2.14.0',
      failed: false,
      at: '2026-11-20T10:01:17.000Z',
    });
    expect(deployOf(github('create', 'create-tag.json'))).toMatchObject({
      event_type: 'tag',
      revision: 'v2.14.1',
      url: 'https://github.com/northwind/shop-api/releases/tag/v2.14.1',
      // A create event carries no time of its own: the arrival is the deploy's.
      at: RECEIVED.toISOString(),
    });
    expect(deployOf(github('deployment_status', 'deployment-status-success.json'))).toMatchObject({
      event_type: 'deployment',
      summary: 'northwind/shop-api deployed v2.14.1 to production',
      revision: '9c41e07d2b5f8a3e61c0d4b7a2f9e8d1c3b5a7f0',
      url: 'https://github.com/northwind/shop-api/actions/runs/11938200114/job/33273041185',
      failed: false,
      at: '2026-11-21T15:20:44.000Z',
    });
    expect(deployOf(github('deployment_status', 'deployment-status-failure.json'))).toMatchObject({
      summary: 'northwind/shop-api: deployment of v2.14.2 to production failed',
      failed: true,
    });
  });

  it('answers ping, ignores what it does not record, and rejects what it cannot read, saying why', () => {
    expect(github('ping', 'ping.json')).toEqual({ kind: 'pong', event: 'ping', external_id: 'd-1' });
    expect(github('push', 'ping.json')).toMatchObject({ kind: 'ignored', reason: 'GitHub event push is not recorded' });
    const draft = JSON.parse(fixture('github/release-published.json').toString()) as { action: string };
    draft.action = 'created';
    expect(parseGithub(delivery(JSON.stringify(draft), { 'x-github-event': 'release' }))).toMatchObject({
      kind: 'ignored',
      reason: 'release action created is not recorded (only published)',
    });
    expect(parseGithub(delivery('{"action":"published"}', { 'x-github-event': 'release' }))).toMatchObject({
      kind: 'rejected',
      reason: expect.stringMatching(/^release payload: /),
    });
    expect(parseGithub(delivery('not json', { 'x-github-event': 'release' }))).toMatchObject({
      kind: 'rejected',
      reason: 'the body is not JSON',
    });
    expect(parseGithub(delivery('{}'))).toMatchObject({
      kind: 'rejected',
      reason: 'the X-GitHub-Event header is missing',
    });
  });

  it('reads the form-encoded body, and names a delivery without an id by its body', () => {
    const json = fixture('github/create-tag.json');
    const form = `payload=${encodeURIComponent(json.toString())}`;
    const parsed = parseGithub(
      delivery(form, {
        'x-github-event': 'create',
        'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
      }),
    );
    expect(deployOf(parsed).revision).toBe('v2.14.1');
    expect(parsed.external_id).toBe(bodyDigest(Buffer.from(form)));
    expect(
      parseGithub(delivery('x=1', { 'x-github-event': 'create', 'content-type': 'application/x-www-form-urlencoded' })),
    ).toMatchObject({ kind: 'rejected', reason: 'the form body has no payload field' });
  });
});

describe('GitLab', () => {
  it('tag pushes, releases and deployments become deploys, GitLab’s times read as UTC', () => {
    expect(deployOf(gitlab('Tag Push Hook', 'tag-push.json'))).toMatchObject({
      event_type: 'tag',
      app: 'northwind/billing-worker',
      revision: 'v3.2.0',
      url: 'https://gitlab.example.com/northwind/billing-worker/-/tags/v3.2.0',
    });
    expect(deployOf(gitlab('Release Hook', 'release-create.json'))).toMatchObject({
      event_type: 'release',
      summary: 'northwind/billing-worker released Billing worker 3.2.0',
      revision: 'v3.2.0',
      at: '2026-11-21T10:15:42.000Z',
    });
    expect(deployOf(gitlab('Deployment Hook', 'deployment-success.json'))).toMatchObject({
      summary: 'northwind/billing-worker deployed a8e1c5d9 to production',
      revision: 'a8e1c5d9',
      url: 'https://gitlab.example.com/northwind/billing-worker/-/jobs/998120',
      failed: false,
      at: '2026-11-21T11:31:08.000Z',
    });
    expect(deployOf(gitlab('Deployment Hook', 'deployment-failed.json'))).toMatchObject({
      revision: 'c0ffee12',
      failed: true,
    });
  });

  it('ignores a deleted tag, and takes object_kind when the header is missing', () => {
    const deleted = JSON.parse(fixture('gitlab/tag-push.json').toString()) as Record<string, unknown>;
    deleted.after = '0'.repeat(40);
    deleted.checkout_sha = null;
    expect(parseGitlab(delivery(JSON.stringify(deleted), { 'x-gitlab-event': 'Tag Push Hook' }))).toMatchObject({
      kind: 'ignored',
      reason: 'tag v3.2.0 was deleted; deletions are not recorded',
    });
    expect(deployOf(parseGitlab(delivery(fixture('gitlab/release-create.json')))).event_type).toBe('release');
    expect(parseGitlab(delivery('{"x":1}'))).toMatchObject({ kind: 'rejected' });
  });
});

describe('Argo CD', () => {
  it('a succeeded and a failed sync become deploys, the failure with its message', () => {
    const ok = parseArgocd(delivery(fixture('argocd/sync-succeeded.json')));
    expect(deployOf(ok)).toMatchObject({
      event_type: 'sync_succeeded',
      app: 'shop-api-prod',
      revision: '9c41e07d2b5f8a3e61c0d4b7a2f9e8d1c3b5a7f0',
      url: 'https://argocd.northwind.example/applications/shop-api-prod',
      failed: false,
      at: '2026-11-21T15:24:03.000Z',
    });
    const failed = deployOf(parseArgocd(delivery(fixture('argocd/sync-failed.json'))));
    expect(failed).toMatchObject({ event_type: 'sync_failed', failed: true });
    expect(failed.summary).toMatch(/^shop-api-prod: sync of 1f0e2d3c\w+ failed \(one or more objects failed to apply/);
  });

  it("reads a user's template leniently: <no value> is absent, links are http(s), a running sync is ignored", () => {
    const parsed = deployOf(
      parseArgocd(
        delivery(
          JSON.stringify({
            trigger: 'on-sync-failed',
            app: 'a',
            revision: '<no value>',
            url: '<no value>/applications/a',
          }),
        ),
      ),
    );
    expect(parsed).toMatchObject({ revision: '', url: null, failed: true, at: RECEIVED.toISOString() });
    expect(parsed.summary).toBe('a: sync of the target revision failed');
    expect(parseArgocd(delivery('{"app":"a","phase":"Running"}'))).toMatchObject({ kind: 'ignored' });
    expect(parseArgocd(delivery('{"phase":"Succeeded"}'))).toMatchObject({
      kind: 'rejected',
      reason: expect.stringContaining('the application name is missing'),
    });
  });
});

describe('Alertmanager', () => {
  it('a firing notification and its resolution are one alert group, its host found from instance', () => {
    const firing = parseAlertmanager(delivery(fixture('alertmanager/firing.json')));
    const resolved = parseAlertmanager(delivery(fixture('alertmanager/resolved.json')));
    if (firing.kind !== 'alert' || resolved.kind !== 'alert') throw new Error('expected alerts');
    expect(firing.alert).toMatchObject({
      status: 'firing',
      name: 'HighCPULoad',
      severity: 'critical',
      fired_at: '2026-11-21T14:12:30.418Z',
      // Alertmanager's 0001-01-01 means "not ended".
      resolved_at: null,
      host_ids: [],
      host_names: ['web-1.northwind.internal'],
      external_url: 'http://alertmanager.northwind.internal:9093',
    });
    expect(firing.alert.alerts[0]).toMatchObject({ status: 'firing', ends_at: null, fingerprint: '3f8a2c91d05e7b44' });
    expect(resolved.alert).toMatchObject({ status: 'resolved', resolved_at: '2026-11-21T14:47:30.418Z' });
    expect(resolved.alert.group_key).toBe(firing.alert.group_key);
    // No delivery id: the body names the delivery.
    expect(firing.external_id).not.toBe(resolved.external_id);
  });

  it('takes the most severe alert when the group has no common severity, and refuses other payload versions', () => {
    const body = {
      groupKey: 'k\u0000ey',
      status: 'firing',
      alerts: [
        { status: 'firing', labels: { alertname: 'A', severity: 'warning', host_id: 'h-1' } },
        { status: 'firing', labels: { alertname: 'A', severity: 'critical', instance: '[::1]:9100' } },
      ],
    };
    const parsed = parseAlertmanager(delivery(JSON.stringify(body)));
    if (parsed.kind !== 'alert') throw new Error(JSON.stringify(parsed));
    expect(parsed.alert).toMatchObject({
      name: 'A',
      severity: 'critical',
      group_key: 'key',
      host_ids: ['h-1'],
      host_names: ['::1'],
      fired_at: RECEIVED.toISOString(),
    });
    expect(parseAlertmanager(delivery(JSON.stringify({ ...body, version: '3' })))).toMatchObject({
      kind: 'rejected',
      reason: 'webhook payload version 3 is not supported (version 4 is)',
    });
    expect(parseAlertmanager(delivery(JSON.stringify({ ...body, alerts: [] })))).toMatchObject({ kind: 'rejected' });
  });

  it('reads instance labels without their port', () => {
    expect(instanceHost('10.0.0.5:9100')).toBe('10.0.0.5');
    expect(instanceHost('[2001:db8::1]:9100')).toBe('2001:db8::1');
    expect(instanceHost('2001:db8::1')).toBe('2001:db8::1');
    expect(instanceHost(' web-1 ')).toBe('web-1');
  });
});

describe('the parsers’ shared reading', () => {
  it('times as senders write them, as UTC; zero and unparseable times as absent', () => {
    expect(isoTime('2021-04-28 21:50:00 +0200')).toBe('2021-04-28T19:50:00.000Z');
    expect(isoTime('2021-04-28 21:50:00 UTC')).toBe('2021-04-28T21:50:00.000Z');
    expect(isoTime('2026-11-21T14:12:30.418123Z')).toBe('2026-11-21T14:12:30.418Z');
    for (const t of ['0001-01-01T00:00:00Z', 'soon', '', '   ', 42, null])
      expect(isoTime(t), String(t)).toBeUndefined();
  });

  it('clips on a code-point boundary and drops NULs', () => {
    expect(clip('a\u0000b', 10)).toBe('ab');
    expect(clip('ab😀', 3)).toBe('ab');
    expect(clip('abc', 3)).toBe('abc');
  });
});

describe('signatures', () => {
  const body = fixture('github/create-tag.json');
  const hmac = (key: string) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;

  it('GitHub: the HMAC of the raw body under the secret, in any letter case', () => {
    expect(verifySignature('github', 's3cret', { 'x-hub-signature-256': hmac('s3cret') }, body).ok).toBe(true);
    expect(verifySignature('github', 's3cret', { 'x-hub-signature-256': hmac('s3cret').toUpperCase() }, body).ok).toBe(
      true,
    );
    expect(verifySignature('github', 's3cret', { 'x-hub-signature-256': hmac('other') }, body)).toEqual({
      ok: false,
      reason: 'X-Hub-Signature-256 does not match the body under the shared secret',
    });
    expect(verifySignature('github', 's3cret', {}, body).reason).toBe('the X-Hub-Signature-256 header is missing');
    expect(
      verifySignature('github', 's3cret', { 'x-hub-signature-256': hmac('s3cret') }, Buffer.from(' ' + body.toString()))
        .ok,
    ).toBe(false);
  });

  it('GitLab: the token itself; Argo CD and Alertmanager: a bearer credential', () => {
    expect(verifySignature('gitlab', 'tok', { 'x-gitlab-token': 'tok' }, body).ok).toBe(true);
    expect(verifySignature('gitlab', 'tok', { 'x-gitlab-token': 'tok2' }, body).ok).toBe(false);
    for (const source of ['argocd', 'alertmanager'] as const) {
      expect(verifySignature(source, 'b', { authorization: 'Bearer b' }, body).ok, source).toBe(true);
      expect(verifySignature(source, 'b', { authorization: 'bearer  b' }, body).ok, source).toBe(true);
      expect(verifySignature(source, 'b', { authorization: 'Basic b' }, body).reason, source).toBe(
        'the Authorization: Bearer header is missing',
      );
    }
  });

  it('without a secret, nothing passes, not even an empty credential', () => {
    expect(verifySignature('gitlab', null, { 'x-gitlab-token': '' }, body).ok).toBe(false);
    expect(verifySignature('argocd', null, { authorization: 'Bearer ' }, body).ok).toBe(false);
    expect(verifySignature('github', null, { 'x-hub-signature-256': hmac('') }, body).ok).toBe(false);
  });
});
