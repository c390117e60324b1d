import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishDurable } from '../../platform/jetstream.ts';
import { SecretBox } from '../../platform/secret-box.ts';
import { api, expectStatus, userWith, waitForAudit } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import { renderGoTemplate } from '../support/go-template.ts';
import type { TestSystem } from '../support/system.ts';
import {
  createEnvironment,
  createHost,
  createReceiver,
  deliver,
  eventually,
  fixture,
  githubSignature,
  PUBLIC_URL,
  startEventsSystem,
  type IssuedReceiver,
} from './support.ts';

let sys: TestSystem;
let root: string;
let clientId: string;
let envId: string;

beforeAll(async () => {
  ({ sys, root } = await startEventsSystem());
  clientId = (await createClient(sys)).id;
  envId = await createEnvironment(sys, clientId);
});
afterAll(() => sys?.stop());

interface DeployRow {
  source: string;
  event_type: string;
  summary: string;
  app: string;
  revision: string;
  url: string | null;
  failed: boolean;
  at: string;
  environment_id: string | null;
}
const deploysOf = (receiverId: string) =>
  sys.sql<DeployRow>(
    `SELECT source, event_type, summary, app, revision, url, failed, at, environment_id FROM deploys WHERE receiver_id = ? ORDER BY at`,
    [receiverId],
  );
const rejectedOf = (receiverId: string) =>
  sys.sql<{ reason: string; body_excerpt: string; event: string; headers: Record<string, string> }>(
    `SELECT reason, body_excerpt, event, headers FROM rejected_deliveries WHERE receiver_id = ? ORDER BY received_at, created_at`,
    [receiverId],
  );

const github = (
  r: IssuedReceiver,
  secret: string | null,
  event: string,
  body: Buffer,
  delivery = randomUUID(),
  extra: Record<string, string> = {},
) =>
  deliver(sys, r.path, body, {
    'x-github-event': event,
    'x-github-delivery': delivery,
    'user-agent': 'GitHub-Hookshot/7f1b2c3',
    ...(secret ? { 'x-hub-signature-256': githubSignature(secret, body) } : {}),
    ...extra,
  });

describe('receiver management', () => {
  it('creates a webhook endpoint: the token is shown once with the full receiver URL, stored as a hash; the secret is sealed', async () => {
    const call = api(sys, { token: root });
    const res = await call('POST', '/api/v1/webhook-endpoints', {
      client_id: clientId,
      environment_id: envId,
      source: 'github',
      name: 'shop-api',
      secret: 'gh-s3cret-value',
    });
    expectStatus(res, 201);
    const data = res.json().data as Record<string, unknown> & { id: string; token: string; url: string };
    expect(data.token).toMatch(/^svc_wh_[A-Za-z0-9_-]{43}$/);
    expect(data.url).toBe(`${PUBLIC_URL}/api/v1/webhooks/github/${data.token}`);
    expect(data).toMatchObject({
      client_id: clientId,
      environment_id: envId,
      source: 'github',
      name: 'shop-api',
      has_secret: true,
      token_prefix: data.token.slice(0, 12),
      last_delivery_at: null,
    });

    const got = await call('GET', `/api/v1/webhook-endpoints/${data.id}`);
    expectStatus(got, 200);
    expect(got.json().data).not.toHaveProperty('token');
    expect(got.json().data).not.toHaveProperty('url');
    expect(JSON.stringify(got.json())).not.toContain('gh-s3cret-value');

    const [row] = await sys.sql<{ token_hash: string; secret_enc: string }>(
      `SELECT token_hash, secret_enc FROM event_receivers WHERE id = ?`,
      [data.id],
    );
    expect(row!.token_hash).toBe(createHash('sha256').update(data.token).digest('hex'));
    expect(row!.secret_enc).toMatch(/^v1\./);
    expect(row!.secret_enc).not.toContain('gh-s3cret-value');

    const list = await call('GET', `/api/v1/webhook-endpoints?client_id=${clientId}&source=github`);
    expectStatus(list, 200);
    expect(list.json().data.map((e: { id: string }) => e.id)).toContain(data.id);
    expect(list.json().meta).toMatchObject({ page: 1, per_page: 20 });
    await waitForAudit(sys, root, { action: 'webhook_endpoint.created', resource_id: data.id });
  });

  it('scopes receivers to their client: 404 out of reach, 403 without the webhooks or alertsources permission', async () => {
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'gitlab',
      name: 'billing',
    });
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prom' });
    const other = await createClient(sys);
    const outsider = api(sys, { token: (await userWith(sys, 'Admin', other.id)).token });
    for (const [m, url] of [
      ['GET', `/api/v1/webhook-endpoints/${r.id}`],
      ['PUT', `/api/v1/webhook-endpoints/${r.id}`],
      ['DELETE', `/api/v1/webhook-endpoints/${r.id}`],
      ['GET', `/api/v1/webhook-endpoints/${r.id}/rejected-deliveries`],
      ['GET', `/api/v1/alert-sources/${a.id}`],
      ['DELETE', `/api/v1/alert-sources/${a.id}`],
    ] as const) {
      expectStatus(await outsider(m, url, m === 'PUT' ? { name: 'x' } : undefined), 404);
    }
    expectStatus(await outsider('GET', `/api/v1/webhook-endpoints?client_id=${clientId}`), 404);
    const theirs = await outsider('GET', '/api/v1/webhook-endpoints');
    expect(theirs.json().data.map((e: { id: string }) => e.id)).not.toContain(r.id);
    expectStatus(
      await outsider('POST', '/api/v1/webhook-endpoints', { client_id: clientId, source: 'github', name: 'x' }),
      404,
    );

    const engineer = api(sys, { token: (await userWith(sys, 'Engineer', clientId)).token });
    expectStatus(await engineer('GET', `/api/v1/webhook-endpoints/${r.id}`), 403);
    expectStatus(
      await engineer('POST', '/api/v1/webhook-endpoints', { client_id: clientId, source: 'github', name: 'x' }),
      403,
    );
    expectStatus(await engineer('GET', `/api/v1/alert-sources/${a.id}`), 403);
    expectStatus(await engineer('GET', '/api/v1/alert-sources'), 403);
    // A webhook endpoint is not an alert source and the other way round.
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/alert-sources/${r.id}`), 404);
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/webhook-endpoints/${a.id}`), 404);
  });

  it('validates bodies: unknown source, empty name, an environment of another client, the client or source in a PUT', async () => {
    const call = api(sys, { token: root });
    expectStatus(
      await call('POST', '/api/v1/webhook-endpoints', { client_id: clientId, source: 'bitbucket', name: 'x' }),
      400,
    );
    expectStatus(
      await call('POST', '/api/v1/webhook-endpoints', { client_id: clientId, source: 'github', name: '  ' }),
      400,
    );
    expectStatus(
      await call('POST', '/api/v1/webhook-endpoints', { client_id: clientId, source: 'github', name: 'x', secret: '' }),
      400,
    );
    expectStatus(
      await call('POST', '/api/v1/webhook-endpoints', { client_id: 'nope', source: 'github', name: 'x' }),
      400,
    );
    expectStatus(
      await call('POST', '/api/v1/webhook-endpoints', { client_id: randomUUID(), source: 'github', name: 'x' }),
      404,
    );
    const other = await createClient(sys);
    const foreignEnv = await createEnvironment(sys, other.id);
    expectStatus(
      await call('POST', '/api/v1/webhook-endpoints', {
        client_id: clientId,
        environment_id: foreignEnv,
        source: 'github',
        name: 'x',
      }),
      404,
    );
    expectStatus(
      await call('POST', '/api/v1/alert-sources', { client_id: clientId, name: 'x', source: 'github' }),
      400,
    );
    expectStatus(
      await call('POST', '/api/v1/alert-sources', { client_id: clientId, name: 'x', oncall_phone: '555-1234' }),
      400,
    );
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'github',
      name: 'x',
    });
    const moved = await call('PUT', `/api/v1/webhook-endpoints/${r.id}`, { name: 'x', client_id: other.id });
    expectStatus(moved, 400);
    expect(moved.json().error.message).toContain('client');
    expectStatus(await call('PUT', `/api/v1/webhook-endpoints/${r.id}`, { name: 'x', source: 'gitlab' }), 400);
    expectStatus(
      await call('PUT', `/api/v1/webhook-endpoints/${r.id}`, { name: 'x', environment_id: foreignEnv }),
      404,
    );
  });

  it('renames, moves, sets and clears the secret, and rotates the token: the old token stops at once', async () => {
    const call = api(sys, { token: root });
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'github',
      name: 'old',
    });
    const body = fixture('github/ping.json');
    expectStatus(await github(r, null, 'ping', body), 200);

    const withSecret = await call('PUT', `/api/v1/webhook-endpoints/${r.id}`, {
      name: 'new',
      environment_id: envId,
      secret: 'later-secret',
    });
    expectStatus(withSecret, 200);
    expect(withSecret.json().data).toMatchObject({ name: 'new', environment_id: envId, has_secret: true });
    expect(withSecret.json().data).not.toHaveProperty('token');
    // The secret now applies: unsigned deliveries are refused, signed ones pass.
    expectStatus(await github(r, null, 'ping', body), 401);
    expectStatus(await github(r, 'later-secret', 'ping', body), 200);

    const cleared = await call('PUT', `/api/v1/webhook-endpoints/${r.id}`, { name: 'new', secret: null });
    expect(cleared.json().data).toMatchObject({ has_secret: false, environment_id: envId });
    expectStatus(await github(r, null, 'ping', body), 200);

    const rotated = await call('PUT', `/api/v1/webhook-endpoints/${r.id}`, { name: 'new', rotate_token: true });
    expectStatus(rotated, 200);
    const fresh = rotated.json().data as { token: string; url: string };
    expect(fresh.token).not.toBe(r.token);
    expect(fresh.url).toBe(`${PUBLIC_URL}/api/v1/webhooks/github/${fresh.token}`);
    expectStatus(await github(r, null, 'ping', body), 404);
    expectStatus(await deliver(sys, fresh.url.slice(PUBLIC_URL.length), body, { 'x-github-event': 'ping' }), 200);
    await waitForAudit(
      sys,
      root,
      { action: 'webhook_endpoint.updated', resource_id: r.id },
      (e) => (e.details.changes as Record<string, unknown>).token === 'rotated',
    );
  });

  it('deletes a receiver: its token is 404 from then on and its recorded deploys stay', async () => {
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'github',
      name: 'gone-soon',
    });
    const body = fixture('github/create-tag.json');
    expectStatus(await github(r, null, 'create', body), 202);
    await eventually(
      () => deploysOf(r.id),
      (d) => d.length === 1,
      'deploy',
    );
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/webhook-endpoints/${r.id}`), 204);
    expectStatus(await github(r, null, 'create', body), 404);
    const kept = await sys.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM deploys WHERE client_id = ? AND revision = 'v2.14.1' AND receiver_id IS NULL`,
      [clientId],
    );
    expect(kept[0]!.n).toBeGreaterThanOrEqual(1);
  });

  it('keeps an on-call number on alert sources, validated as E.164', async () => {
    const call = api(sys, { token: root });
    const created = await call('POST', '/api/v1/alert-sources', {
      client_id: clientId,
      name: 'prometheus',
      oncall_phone: '+15551230001',
    });
    expectStatus(created, 201);
    const a = created.json().data as { id: string; token: string; url: string; oncall_phone: string; source: string };
    expect(a.token).toMatch(/^svc_as_[A-Za-z0-9_-]{43}$/);
    expect(a.url).toBe(`${PUBLIC_URL}/api/v1/alerts/webhook/alertmanager/${a.token}`);
    expect(a).toMatchObject({ source: 'alertmanager', oncall_phone: '+15551230001' });
    const changed = await call('PUT', `/api/v1/alert-sources/${a.id}`, { name: 'prometheus', oncall_phone: null });
    expect(changed.json().data.oncall_phone).toBeNull();
    expectStatus(await call('PUT', `/api/v1/alert-sources/${a.id}`, { name: 'prometheus', oncall_phone: '+0' }), 400);
  });
});

describe('GitHub receiver', () => {
  let r: IssuedReceiver;
  const secret = 'It5-a-GitHub-secret';
  beforeAll(async () => {
    r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      environment_id: envId,
      source: 'github',
      name: 'shop-api',
      secret,
    });
  });

  it('records a published release, a tag and deployment statuses from GitHub’s payloads', async () => {
    for (const [event, file] of [
      ['release', 'release-published'],
      ['create', 'create-tag'],
      ['deployment_status', 'deployment-status-success'],
      ['deployment_status', 'deployment-status-failure'],
    ] as const) {
      const res = await github(r, secret, event, fixture(`github/${file}.json`));
      expectStatus(res, 202);
      expect(res.json().data).toMatchObject({ outcome: 'accepted' });
      expect(res.json().data.delivery_id).toMatch(/^[0-9a-f-]{36}$/);
    }
    const rows = await eventually(
      () => deploysOf(r.id),
      (d) => d.length === 4,
      'four deploys',
    );
    const by = (type: string, failed = false) => rows.find((d) => d.event_type === type && d.failed === failed);
    expect(by('release')).toMatchObject({
      source: 'github',
      app: 'northwind/shop-api',
      revision: 'v2.14.0',
      summary: 'northwind/shop-api released v2.14.0 – faster checkout',
      url: 'https://github.com/northwind/shop-api/releases/tag/v2.14.0',
      environment_id: envId,
    });
    expect(new Date(by('release')!.at).toISOString()).toBe('2026-11-20T10:01:17.000Z');
    expect(by('tag')).toMatchObject({
      revision: 'v2.14.1',
      url: 'https://github.com/northwind/shop-api/releases/tag/v2.14.1',
    });
    expect(by('deployment')).toMatchObject({
      revision: '9c41e07d2b5f8a3e61c0d4b7a2f9e8d1c3b5a7f0',
      summary: 'northwind/shop-api deployed v2.14.1 to production',
    });
    expect(by('deployment', true)).toMatchObject({
      summary: 'northwind/shop-api: deployment of v2.14.2 to production failed',
    });
    expect(by('deployment', true)!.url).toContain('/actions/runs/');
    const [receiver] = await sys.sql<{ last_delivery_at: Date | null }>(
      `SELECT last_delivery_at FROM event_receivers WHERE id = ?`,
      [r.id],
    );
    expect(receiver!.last_delivery_at).not.toBeNull();
  });

  it('answers ping with 200 and records nothing', async () => {
    const before = (await deploysOf(r.id)).length;
    const res = await github(r, secret, 'ping', fixture('github/ping.json'));
    expectStatus(res, 200);
    expect(res.json().data).toMatchObject({ outcome: 'pong', delivery_id: null });
    expect((await deploysOf(r.id)).length).toBe(before);
  });

  it('refuses a wrong or missing signature with 401 and keeps a rejected delivery without the body', async () => {
    const body = fixture('github/release-published.json');
    const forged = await github(r, 'not-the-secret', 'release', body);
    expectStatus(forged, 401);
    expect(forged.json().error.code).toBe('unauthorized');
    const tampered = Buffer.from(body.toString('utf8').replace('v2.14.0', 'v9.9.9'));
    expectStatus(
      await deliver(sys, r.path, tampered, {
        'x-github-event': 'release',
        'x-hub-signature-256': githubSignature(secret, body),
      }),
      401,
    );
    const missing = await github(r, null, 'release', body);
    expectStatus(missing, 401);
    expect(missing.json().error.message).toContain('X-Hub-Signature-256');
    const rejected = await eventually(
      () => rejectedOf(r.id),
      (x) => x.length >= 3,
      'rejected deliveries',
    );
    expect(rejected.every((x) => x.body_excerpt === '' && x.event === 'release')).toBe(true);
    expect(rejected.map((x) => x.reason)).toContain('the X-Hub-Signature-256 header is missing');
    expect((await deploysOf(r.id)).some((d) => d.revision === 'v9.9.9')).toBe(false);
  });

  it('accepts the form-encoded body GitHub sends when the hook’s content type is form, signed over the raw bytes', async () => {
    const payload = JSON.parse(fixture('github/create-tag.json').toString('utf8')) as { ref: string };
    payload.ref = 'v2.15.0-form';
    const form = Buffer.from(new URLSearchParams({ payload: JSON.stringify(payload) }).toString());
    const res = await deliver(sys, r.path, form, {
      'content-type': 'application/x-www-form-urlencoded',
      'x-github-event': 'create',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': githubSignature(secret, form),
    });
    expectStatus(res, 202);
    await eventually(
      () => deploysOf(r.id),
      (d) => d.some((x) => x.revision === 'v2.15.0-form'),
      'form delivery stored',
    );
  });

  it('stores a delivery GitHub repeats (same X-GitHub-Delivery) once: in the stream window, and after it', async () => {
    const payload = JSON.parse(fixture('github/create-tag.json').toString('utf8')) as { ref: string };
    payload.ref = 'v2.16.0-dup';
    const body = Buffer.from(JSON.stringify(payload));
    const delivery = randomUUID();
    const first = await github(r, secret, 'create', body, delivery);
    expectStatus(first, 202);
    expect(first.json().data.outcome).toBe('accepted');
    const again = await github(r, secret, 'create', body, delivery);
    expectStatus(again, 202);
    expect(again.json().data.outcome).toBe('duplicate');
    // A redelivery after the stream's duplicate window (simulated: the same delivery id under another message id)
    // is dropped by the store's unique key.
    const [row] = await sys.sql<{ client_id: string }>(`SELECT client_id FROM event_receivers WHERE id = ?`, [r.id]);
    await publishDurable(sys.nc, 'svc.work.events.delivery', {
      delivery_id: randomUUID(),
      receiver_id: r.id,
      client_id: row!.client_id,
      environment_id: envId,
      source: 'github',
      received_at: new Date().toISOString(),
      external_id: delivery,
      event: 'create',
      outcome: {
        kind: 'deploy',
        deploy: {
          event_type: 'tag',
          summary: 'late repeat',
          app: 'northwind/shop-api',
          revision: 'v2.16.0-dup',
          url: null,
          failed: false,
          at: new Date().toISOString(),
        },
      },
    });
    const different = await github(
      r,
      secret,
      'create',
      Buffer.from(JSON.stringify({ ...payload, ref: 'v2.16.1' })),
      randomUUID(),
    );
    expectStatus(different, 202);
    await eventually(
      () => deploysOf(r.id),
      (d) => d.some((x) => x.revision === 'v2.16.1'),
      'later delivery stored',
    );
    const dups = (await deploysOf(r.id)).filter((d) => d.revision === 'v2.16.0-dup');
    expect(dups).toHaveLength(1);
    expect(dups[0]!.summary).not.toBe('late repeat');
  });

  it('answers 200 for what it does not record: other release actions, branch creation, other events', async () => {
    const release = JSON.parse(fixture('github/release-published.json').toString('utf8')) as { action: string };
    release.action = 'edited';
    const edited = Buffer.from(JSON.stringify(release));
    const res = await github(r, secret, 'release', edited);
    expectStatus(res, 200);
    expect(res.json().data).toMatchObject({
      outcome: 'ignored',
      message: 'release action edited is not recorded (only published)',
    });
    const branch = Buffer.from(
      JSON.stringify({
        ...JSON.parse(fixture('github/create-tag.json').toString('utf8')),
        ref_type: 'branch',
        ref: 'feature/x',
      }),
    );
    expect((await github(r, secret, 'create', branch)).json().data.outcome).toBe('ignored');
    expect((await github(r, secret, 'issues', Buffer.from('{"action":"opened"}'))).json().data.outcome).toBe('ignored');
  });
});

describe('GitLab receiver', () => {
  it('records tag pushes, releases and deployments, checking X-Gitlab-Token', async () => {
    const secret = 'gitlab-hook-token';
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'gitlab',
      name: 'billing-worker',
      secret,
    });
    const send = (event: string, file: string, token = secret) =>
      deliver(sys, r.path, fixture(`gitlab/${file}.json`), {
        'x-gitlab-event': event,
        'x-gitlab-token': token,
        'x-gitlab-event-uuid': randomUUID(),
        'user-agent': 'GitLab/17.5.1',
      });
    for (const [event, file] of [
      ['Tag Push Hook', 'tag-push'],
      ['Release Hook', 'release-create'],
      ['Deployment Hook', 'deployment-success'],
      ['Deployment Hook', 'deployment-failed'],
    ] as const) {
      expectStatus(await send(event, file), 202);
    }
    const bad = await send('Tag Push Hook', 'tag-push', 'wrong');
    expectStatus(bad, 401);
    expect(bad.json().error.message).toContain('X-Gitlab-Token');
    const rows = await eventually(
      () => deploysOf(r.id),
      (d) => d.length === 4,
      'four GitLab deploys',
    );
    expect(rows.find((d) => d.event_type === 'tag')).toMatchObject({
      app: 'northwind/billing-worker',
      revision: 'v3.2.0',
      url: 'https://gitlab.example.com/northwind/billing-worker/-/tags/v3.2.0',
      environment_id: null,
    });
    const release = rows.find((d) => d.event_type === 'release')!;
    expect(release).toMatchObject({
      summary: 'northwind/billing-worker released Billing worker 3.2.0',
      url: 'https://gitlab.example.com/northwind/billing-worker/-/releases/v3.2.0',
    });
    expect(new Date(release.at).toISOString()).toBe('2026-11-21T10:15:42.000Z');
    const ok = rows.find((d) => d.event_type === 'deployment' && !d.failed)!;
    expect(ok).toMatchObject({
      revision: 'a8e1c5d9',
      summary: 'northwind/billing-worker deployed a8e1c5d9 to production',
    });
    expect(new Date(ok.at).toISOString()).toBe('2026-11-21T11:31:08.000Z');
    expect(rows.find((d) => d.failed)).toMatchObject({
      revision: 'c0ffee12',
      url: 'https://gitlab.example.com/northwind/billing-worker/-/jobs/998177',
    });

    // A deleted tag is not a deploy.
    const deleted = JSON.parse(fixture('gitlab/tag-push.json').toString('utf8')) as Record<string, unknown>;
    Object.assign(deleted, { checkout_sha: null, after: '0000000000000000000000000000000000000000' });
    const res = await deliver(sys, r.path, JSON.stringify(deleted), {
      'x-gitlab-event': 'Tag Push Hook',
      'x-gitlab-token': secret,
    });
    expectStatus(res, 200);
    expect(res.json().data.outcome).toBe('ignored');
  });
});

describe('Argo CD receiver', () => {
  it('records sync succeeded and sync failed with app, revision and URL; the bearer secret is checked', async () => {
    const secret = 'argo-shared';
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      environment_id: envId,
      source: 'argocd',
      name: 'argo',
      secret,
    });
    const send = (file: string, auth = `Bearer ${secret}`) =>
      deliver(sys, r.path, fixture(`argocd/${file}.json`), { authorization: auth, 'user-agent': 'Go-http-client/1.1' });
    expectStatus(await send('sync-succeeded'), 202);
    expectStatus(await send('sync-failed'), 202);
    expectStatus(await send('sync-failed', 'Bearer nope'), 401);
    expectStatus(await send('sync-failed', ''), 401);
    const rows = await eventually(
      () => deploysOf(r.id),
      (d) => d.length === 2,
      'two syncs',
    );
    expect(rows[0]).toMatchObject({
      event_type: 'sync_succeeded',
      failed: false,
      app: 'shop-api-prod',
      revision: '9c41e07d2b5f8a3e61c0d4b7a2f9e8d1c3b5a7f0',
      url: 'https://argocd.northwind.example/applications/shop-api-prod',
    });
    expect(rows[1]).toMatchObject({ event_type: 'sync_failed', failed: true });
    expect(rows[1]!.summary).toContain('failed');
    expect(new Date(rows[1]!.at).toISOString()).toBe('2026-11-21T16:05:51.000Z');
    // The same notification again (same body) within the window is a duplicate.
    expect((await send('sync-failed')).json().data.outcome).toBe('duplicate');
    const running = await deliver(
      sys,
      r.path,
      JSON.stringify({ event: 'on-sync-running', app: 'shop-api-prod', phase: 'Running' }),
      { authorization: `Bearer ${secret}` },
    );
    expect(running.json().data.outcome).toBe('ignored');
  });

  /** The documented Argo CD configuration (docs/api/events.md): the webhook service's headers and the template's body, as YAML reads them. */
  function readmeArgoConfig(): { headers: Record<string, string>; body: string } {
    const readme = readFileSync('docs/api/events.md', 'utf8');
    const yaml = /Template to configure \(argocd-notifications-cm\):\s*```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    if (!yaml) expect.fail('docs/api/events.md has no Argo CD template block');
    const headers = Object.fromEntries(
      [...yaml.matchAll(/- name: (\S+)\s*\n\s*value: (.+)/g)].map(([, k, v]) => [k!.toLowerCase(), v!.trim()]),
    );
    // A YAML literal block (`body: |`): the lines indented deeper than its key, less the first one's indentation.
    const lines = yaml.split('\n');
    const at = lines.findIndex((l) => /^\s*body: \|\s*$/.test(l));
    const keyIndent = lines[at]!.search(/\S/);
    const block = lines.slice(at + 1);
    const end = block.findIndex((l) => l.trim() !== '' && l.search(/\S/) <= keyIndent);
    const own = end < 0 ? block : block.slice(0, end);
    const indent = own.find((l) => l.trim() !== '')!.search(/\S/);
    return {
      headers,
      body: `${own
        .map((l) => l.slice(indent))
        .join('\n')
        .trimEnd()}\n`,
    };
  }

  /** An Argo CD Application as the notifications controller sees it (the Kubernetes object, JSON-decoded). */
  function application(operationState: Record<string, unknown> | undefined): Record<string, unknown> {
    return {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'shop-api-prod', namespace: 'argocd' },
      spec: {
        project: 'storefront',
        source: {
          repoURL: 'https://github.com/northwind/deploy-config.git',
          path: 'apps/shop-api',
          targetRevision: 'main',
        },
        destination: { server: 'https://kubernetes.default.svc', namespace: 'shop' },
      },
      status: {
        sync: { status: 'OutOfSync', revision: '5e2b7c0d9a8f6e4d3c2b1a0f9e8d7c6b5a4f3e2d' },
        health: { status: 'Missing' },
        ...(operationState ? { operationState } : {}),
      },
    };
  }
  const ARGO_CONTEXT = { argocdUrl: 'https://argocd.northwind.example', notificationType: 'webhook' };

  it("records a failed sync sent through the README's template, message quoting a resource: a failed deploy marker", async () => {
    const secret = 'argo-template';
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      environment_id: envId,
      source: 'argocd',
      name: 'argo-readme',
      secret,
    });
    const { headers, body: template } = readmeArgoConfig();
    const headersSent = {
      ...headers,
      authorization: headers.authorization!.replace('$console-webhook-secret', secret),
      'user-agent': 'Go-http-client/1.1',
    };
    const message = 'one or more objects failed to apply, reason: namespaces "shop" not found';
    const failing = application({
      operation: { sync: { revision: '5e2b7c0d9a8f6e4d3c2b1a0f9e8d7c6b5a4f3e2d' } },
      phase: 'Failed',
      message,
      startedAt: '2026-11-22T09:41:05Z',
      finishedAt: '2026-11-22T09:41:07Z',
      syncResult: {
        revision: '5e2b7c0d9a8f6e4d3c2b1a0f9e8d7c6b5a4f3e2d',
        resources: [
          {
            group: 'apps',
            version: 'v1',
            kind: 'Deployment',
            namespace: 'shop',
            name: 'shop-api',
            status: 'SyncFailed',
            message: 'namespaces "shop" not found',
          },
        ],
      },
    });
    const body = renderGoTemplate(template, {
      app: failing,
      context: ARGO_CONTEXT,
      serviceType: 'webhook',
      recipient: 'console',
    });
    expect(() => JSON.parse(body) as unknown).not.toThrow();
    expectStatus(await deliver(sys, r.path, body, headersSent), 202);

    const [row] = await eventually(
      () => deploysOf(r.id),
      (d) => d.length === 1,
      'the failed sync',
    );
    expect(row).toMatchObject({
      event_type: 'sync_failed',
      failed: true,
      app: 'shop-api-prod',
      revision: '5e2b7c0d9a8f6e4d3c2b1a0f9e8d7c6b5a4f3e2d',
      url: 'https://argocd.northwind.example/applications/shop-api-prod',
    });
    expect(row!.summary).toContain('namespaces "shop" not found');
    const markers = await api(sys, { token: root })(
      'GET',
      `/api/v1/chart-markers?environment_id=${envId}&start=2026-11-22T09:00:00Z&end=2026-11-22T10:00:00Z&types=deploys`,
    );
    expectStatus(markers, 200);
    const marker = (
      markers.json().data.deploys as { source: string; failed: boolean; summary: string; at: string }[]
    ).find((d) => d.summary.includes('namespaces "shop" not found'));
    expect(marker).toMatchObject({ source: 'argocd', failed: true });
    expect(new Date(marker!.at).toISOString()).toBe('2026-11-22T09:41:07.000Z');

    // A running sync (no finishedAt, no syncResult yet) through the same template: understood, not recorded.
    const running = renderGoTemplate(template, {
      app: application({
        phase: 'Running',
        message: 'waiting for completion of hook batch/Job/migrate',
        startedAt: '2026-11-22T09:45:00Z',
      }),
      context: ARGO_CONTEXT,
    });
    const res = await deliver(sys, r.path, running, headersSent);
    expectStatus(res, 200);
    expect(res.json().data.outcome).toBe('ignored');
    // A sync failed before any operation ran (no operationState at all) still says nothing the receiver cannot read.
    const bare = await deliver(
      sys,
      r.path,
      renderGoTemplate(template, { app: application(undefined), context: ARGO_CONTEXT }),
      headersSent,
    );
    expectStatus(bare, 400);
    expect(bare.json().error.message).toContain('phase');
  });

  it("stores a failed sync from a user's own template: '<no value>' for absent fields, optional fields left out", async () => {
    const secret = 'argo-own';
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'argocd',
      name: 'argo-own',
      secret,
    });
    const send = (body: unknown) => deliver(sys, r.path, JSON.stringify(body), { authorization: `Bearer ${secret}` });
    // A template without toJson, naming a variable Argo CD does not have: Go prints '<no value>' for what is missing.
    const own =
      '{"event": "{{.trigger}}", "app": "{{.app.metadata.name}}", "revision": "{{.app.status.operationState.syncResult.revision}}", ' +
      '"phase": "{{.app.status.operationState.phase}}", "message": "{{.app.status.operationState.message}}", ' +
      '"finished_at": "{{.app.status.operationState.finishedAt}}", "url": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}"}';
    const failing = renderGoTemplate(own, {
      app: application({ phase: 'Error', message: 'ComparisonError: rpc error: code = Unknown' }),
      context: {},
    });
    expect(JSON.parse(failing)).toMatchObject({
      event: '<no value>',
      revision: '<no value>',
      finished_at: '<no value>',
      url: '<no value>/applications/shop-api-prod',
    });
    expectStatus(await send(JSON.parse(failing)), 202);
    // Only what cannot be left out.
    expectStatus(await send({ app: 'billing-worker', phase: 'Failed' }), 202);
    expectStatus(
      await send({ app: 'billing-worker', event: 'on-sync-failed', finished_at: '2026-11-22T11:00:00Z' }),
      202,
    );
    // A running sync sent by the same template.
    const running = await send(
      JSON.parse(renderGoTemplate(own, { app: application({ phase: 'Running' }), context: {} })),
    );
    expectStatus(running, 200);
    expect(running.json().data.outcome).toBe('ignored');
    expect(running.json().data.message).not.toContain('<no value>');

    const rows = await eventually(
      () => deploysOf(r.id),
      (d) => d.length === 3,
      'three failed syncs',
    );
    expect(rows.every((d) => d.failed && d.event_type === 'sync_failed')).toBe(true);
    const fromOwn = rows.find((d) => d.app === 'shop-api-prod')!;
    expect(fromOwn).toMatchObject({ revision: '', url: null });
    expect(fromOwn.summary).toBe(
      'shop-api-prod: sync of the target revision failed (ComparisonError: rpc error: code = Unknown)',
    );
    expect(rows.map((d) => new Date(d.at).toISOString())).toContain('2026-11-22T11:00:00.000Z');

    // The application's name cannot be absent.
    const nameless = await send({ event: 'on-sync-failed', app: '<no value>', phase: 'Failed' });
    expectStatus(nameless, 400);
    expect(nameless.json().error.message).toContain('app');
  });
});

describe('Alertmanager receiver', () => {
  interface GroupRow {
    id: string;
    name: string;
    severity: string;
    status: string;
    fired_at: string;
    resolved_at: string | null;
    host_id: string | null;
    environment_id: string | null;
  }
  const groupsOf = (receiverId: string) =>
    sys.sql<GroupRow>(
      `SELECT id, name, severity, status, fired_at, resolved_at, host_id, environment_id FROM alert_groups WHERE receiver_id = ? ORDER BY fired_at, created_at`,
      [receiverId],
    );

  it('turns a firing notification then its resolution into one alert group, with the host found from instance', async () => {
    const hostId = await createHost(sys, clientId, envId, 'web-1.northwind.internal', '10.20.0.11');
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prometheus' });
    expectStatus(
      await deliver(sys, a.path, fixture('alertmanager/firing.json'), { 'user-agent': 'Alertmanager/0.27.0' }),
      202,
    );
    const [fired] = await eventually(
      () => groupsOf(a.id),
      (g) => g.length === 1,
      'alert group',
    );
    expect(fired).toMatchObject({
      name: 'HighCPULoad',
      severity: 'critical',
      status: 'firing',
      resolved_at: null,
      host_id: hostId,
      environment_id: envId,
    });
    expect(new Date(fired!.fired_at).toISOString()).toBe('2026-11-21T14:12:30.418Z');

    // Alertmanager repeats a firing group every repeat_interval: the same group, not a new one.
    const repeat = JSON.parse(fixture('alertmanager/firing.json').toString('utf8')) as { truncatedAlerts: number };
    repeat.truncatedAlerts = 0.0;
    expectStatus(await deliver(sys, a.path, JSON.stringify({ ...repeat, receiver: 'infrastructure-console ' })), 202);
    expectStatus(await deliver(sys, a.path, fixture('alertmanager/resolved.json')), 202);
    const [resolved] = await eventually(
      () => groupsOf(a.id),
      (g) => g[0]?.status === 'resolved',
      'resolution',
    );
    expect((await groupsOf(a.id)).length).toBe(1);
    expect(resolved).toMatchObject({ id: fired!.id, status: 'resolved', host_id: hostId });
    expect(new Date(resolved!.resolved_at!).toISOString()).toBe('2026-11-21T14:47:30.418Z');
  });

  it('opens a new group when the same alert fires again after it was resolved', async () => {
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prom-2' });
    expectStatus(await deliver(sys, a.path, fixture('alertmanager/firing.json')), 202);
    expectStatus(await deliver(sys, a.path, fixture('alertmanager/resolved.json')), 202);
    await eventually(
      () => groupsOf(a.id),
      (g) => g[0]?.status === 'resolved',
      'resolved',
    );
    const again = JSON.parse(fixture('alertmanager/firing.json').toString('utf8')) as {
      alerts: { startsAt: string }[];
    };
    again.alerts[0]!.startsAt = '2026-11-21T18:00:00Z';
    expectStatus(await deliver(sys, a.path, JSON.stringify(again)), 202);
    const groups = await eventually(
      () => groupsOf(a.id),
      (g) => g.length === 2,
      'second incident',
    );
    expect(groups.map((g) => g.status)).toEqual(['resolved', 'firing']);
  });

  it('keeps a group resolved when its resolution is stored before its firing (deliveries are stored concurrently)', async () => {
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prom-order' });
    const at = (file: string, startsAt: string, endsAt?: string) => {
      const n = JSON.parse(fixture(`alertmanager/${file}.json`).toString('utf8')) as {
        alerts: { startsAt: string; endsAt: string }[];
      };
      n.alerts[0]!.startsAt = startsAt;
      if (endsAt) n.alerts[0]!.endsAt = endsAt;
      return JSON.stringify(n);
    };
    expectStatus(await deliver(sys, a.path, at('resolved', '2026-11-21T14:12:30Z', '2026-11-21T14:47:30Z')), 202);
    await eventually(
      () => groupsOf(a.id),
      (g) => g.length === 1,
      'resolved group',
    );
    expectStatus(await deliver(sys, a.path, at('firing', '2026-11-21T14:12:30Z')), 202);
    // A second incident, its resolution first as well.
    expectStatus(await deliver(sys, a.path, at('resolved', '2026-11-21T20:00:00Z', '2026-11-21T20:30:00Z')), 202);
    await eventually(
      () => groupsOf(a.id),
      (g) => g.length === 2,
      'second incident',
    );
    expectStatus(await deliver(sys, a.path, at('firing', '2026-11-21T20:00:00Z')), 202);
    await new Promise((r) => setTimeout(r, 300));
    const groups = await groupsOf(a.id);
    expect(groups.map((g) => g.status)).toEqual(['resolved', 'resolved']);
  });

  it('takes the host from a host_id label, only within the source’s client', async () => {
    const hostId = await createHost(sys, clientId, envId, 'db-7');
    const other = await createClient(sys);
    const foreignHost = await createHost(sys, other.id, await createEnvironment(sys, other.id), 'db-7');
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prom-3' });
    const make = (labels: Record<string, string>, key: string) => {
      const n = JSON.parse(fixture('alertmanager/firing.json').toString('utf8')) as {
        groupKey: string;
        commonLabels: Record<string, string>;
        alerts: { labels: Record<string, string> }[];
      };
      n.groupKey = key;
      n.commonLabels = { alertname: 'DiskFull', severity: 'warning', ...labels };
      n.alerts[0]!.labels = n.commonLabels;
      return JSON.stringify(n);
    };
    expectStatus(await deliver(sys, a.path, make({ host_id: hostId }, 'g-own')), 202);
    expectStatus(await deliver(sys, a.path, make({ host_id: foreignHost }, 'g-foreign')), 202);
    expectStatus(await deliver(sys, a.path, make({ hostname: 'no-such-host' }, 'g-none')), 202);
    const groups = await eventually(
      () => groupsOf(a.id),
      (g) => g.length === 3,
      'three groups',
    );
    const byKey = Object.fromEntries(
      await Promise.all(
        groups.map(
          async (g) =>
            [
              (await sys.sql<{ group_key: string }>(`SELECT group_key FROM alert_groups WHERE id = ?`, [g.id]))[0]!
                .group_key,
              g,
            ] as const,
        ),
      ),
    );
    expect(byKey['g-own']).toMatchObject({
      host_id: hostId,
      environment_id: envId,
      severity: 'warning',
      name: 'DiskFull',
    });
    expect(byKey['g-foreign']).toMatchObject({ host_id: null, environment_id: null });
    expect(byKey['g-none']).toMatchObject({ host_id: null });
  });

  it('takes an empty severity label as unknown and drops NULs from the group key (202, never 500)', async () => {
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prom-blank' });
    const n = JSON.parse(fixture('alertmanager/firing.json').toString('utf8')) as {
      groupKey: string;
      commonLabels: Record<string, string>;
      alerts: { labels: Record<string, string> }[];
    };
    n.groupKey = 'g-\u0000blank';
    n.commonLabels = { alertname: 'Blank', severity: '' };
    for (const alert of n.alerts) alert.labels = { ...alert.labels, severity: '\u0000' };
    expectStatus(await deliver(sys, a.path, JSON.stringify(n)), 202);
    const [group] = await eventually(
      () => groupsOf(a.id),
      (g) => g.length === 1,
      'one group',
    );
    expect(group).toMatchObject({ severity: 'unknown', name: 'Blank' });
    const [row] = await sys.sql<{ group_key: string }>(`SELECT group_key FROM alert_groups WHERE id = ?`, [group!.id]);
    expect(row!.group_key).toBe('g-blank');
    const nul = { ...n, groupKey: '\u0000' };
    expectStatus(await deliver(sys, a.path, JSON.stringify(nul)), 400);
  });
});

describe('deliveries that cannot be used', () => {
  it('answers 404 for an unknown, revoked or other-source token and for an unknown source word', async () => {
    const body = fixture('github/ping.json');
    expectStatus(
      await deliver(sys, `/api/v1/webhooks/github/svc_wh_${'A'.repeat(43)}`, body, { 'x-github-event': 'ping' }),
      404,
    );
    expectStatus(await deliver(sys, '/api/v1/webhooks/github/x', body, { 'x-github-event': 'ping' }), 404);
    const gl = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'gitlab',
      name: 'gl',
    });
    expectStatus(await deliver(sys, `/api/v1/webhooks/github/${gl.token}`, body, { 'x-github-event': 'ping' }), 404);
    expectStatus(await deliver(sys, `/api/v1/alerts/webhook/alertmanager/${gl.token}`, body), 404);
    expectStatus(await deliver(sys, `/api/v1/webhooks/bitbucket/${gl.token}`, body), 404);
    expectStatus(await deliver(sys, `/api/v1/alerts/webhook/opsgenie/${gl.token}`, body), 404);
    const res = await deliver(sys, `/api/v1/webhooks/github/${'x'.repeat(101)}`, body);
    expect([404, 414]).toContain(res.statusCode);
  });

  it('keeps what cannot be parsed as a rejected delivery with its reason (400), visible to the receiver’s admins only', async () => {
    const a = await createReceiver(sys, root, 'alert-sources', { client_id: clientId, name: 'prom-bad' });
    const notJson = await deliver(sys, a.path, '{"version": "4", "status": ', {});
    expectStatus(notJson, 400);
    expect(notJson.json().error.message).toContain('the body is not JSON');
    const wrongShape = await deliver(
      sys,
      a.path,
      JSON.stringify({ version: '4', status: 'exploding', groupKey: 'k', alerts: [] }),
    );
    expectStatus(wrongShape, 400);
    expectStatus(
      await deliver(
        sys,
        a.path,
        JSON.stringify({ ...JSON.parse(fixture('alertmanager/firing.json').toString('utf8')), version: '3' }),
      ),
      400,
    );
    expectStatus(await deliver(sys, a.path, Buffer.alloc(0)), 400);
    const rejected = await eventually(
      () => rejectedOf(a.id),
      (x) => x.length === 4,
      'four rejected deliveries',
    );
    const reason = (part: string) => rejected.find((x) => x.reason.includes(part));
    expect(reason('the body is not JSON')).toMatchObject({ body_excerpt: '{"version": "4", "status": ' });
    expect(reason('the body is not JSON')!.headers).toHaveProperty('content-type');
    expect(reason('Alertmanager notification: status')).toBeDefined();
    expect(reason('version 3 is not supported')).toBeDefined();
    expect(reason('the body is empty')).toBeDefined();

    const admin = api(sys, { token: (await userWith(sys, 'Admin', clientId)).token });
    const listed = await admin('GET', `/api/v1/alert-sources/${a.id}/rejected-deliveries?per_page=2`);
    expectStatus(listed, 200);
    expect(listed.json().meta).toEqual({ total: 4, page: 1, per_page: 2 });
    const page2 = await admin('GET', `/api/v1/alert-sources/${a.id}/rejected-deliveries?per_page=2&page=2`);
    const reasons = [...listed.json().data, ...page2.json().data].map((x: { reason: string }) => x.reason);
    expect(reasons.sort()).toEqual(rejected.map((x) => x.reason).sort());
    expectStatus(
      await api(sys, { token: (await userWith(sys, 'Client Engineer', clientId)).token })(
        'GET',
        `/api/v1/alert-sources/${a.id}/rejected-deliveries`,
      ),
      403,
    );
  });

  it('refuses deliveries (401, not 500) when the stored secret can no longer be opened', async () => {
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'github',
      name: 'rekeyed',
      secret: 'before-rekey',
    });
    // Sealed under another key, as after SVC_EVENTS_ENCRYPTION_KEY changed.
    await sys.sql(`UPDATE event_receivers SET secret_enc = ? WHERE id = ?`, [
      new SecretBox('ab'.repeat(32)).seal('before-rekey'),
      r.id,
    ]);
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/webhook-endpoints/${r.id}`, { name: 'rekeyed' }), 200);
    const body = fixture('github/ping.json');
    expectStatus(await github(r, 'before-rekey', 'ping', body), 401);
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/webhook-endpoints/${r.id}`, {
        name: 'rekeyed',
        secret: 'after-rekey',
      }),
      200,
    );
    expectStatus(await github(r, 'after-rekey', 'ping', body), 200);
  });

  it('refuses bodies over 1 MB with 413 and never answers 500 to odd requests', async () => {
    const r = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      source: 'github',
      name: 'odd',
    });
    const big = Buffer.alloc(1024 * 1024 + 10, 'a');
    const res = await deliver(sys, r.path, big, { 'x-github-event': 'release' });
    expectStatus(res, 413);
    expect(res.json().error.code).toBe('request_too_large');
    for (const [type, body] of [
      ['text/plain', 'hello'],
      ['application/octet-stream', Buffer.from([0, 1, 2, 255])],
      ['application/json', '\u0000'],
      ['application/json; charset=utf-16', '{}'],
    ] as const) {
      const odd = await deliver(sys, r.path, body, { 'content-type': type, 'x-github-event': 'release' });
      expect(odd.statusCode).toBeLessThan(500);
    }
    const none = await sys.http({ method: 'POST', url: r.path, headers: { 'x-github-event': 'ping' } });
    expect(none.statusCode).toBeLessThan(500);
  });
});
