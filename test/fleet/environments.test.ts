import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from '../identity/admin-support.ts';
import { insertAgent, insertEnvironment, insertHost } from './admin-fixtures.ts';

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

interface EnvOut {
  id: string;
  client_id: string;
  name: string;
  slug: string;
  host_count: number;
  created_at: string;
  updated_at: string;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describe('environments', () => {
  it('creates, reads, renames and deletes an environment, each audited', async () => {
    const call = api(sys, { token: root });
    const client = await createClient(sys);
    const created = await call('POST', `/api/v1/clients/${client.id}/environments`, {
      name: 'Production',
      slug: 'prod',
    });
    expectStatus(created, 201);
    const e = created.json().data as EnvOut;
    expect(Object.keys(e).sort()).toEqual([
      'client_id',
      'created_at',
      'host_count',
      'id',
      'name',
      'slug',
      'updated_at',
    ]);
    expect(e).toMatchObject({ client_id: client.id, name: 'Production', slug: 'prod', host_count: 0 });
    expect(e.created_at).toMatch(ISO);
    expect(e.updated_at).toMatch(ISO);

    const got = await call('GET', `/api/v1/environments/${e.id}`);
    expectStatus(got, 200);
    expect(got.json().data).toEqual(e);

    const renamed = await call('PUT', `/api/v1/environments/${e.id}`, { name: 'Production EU' });
    expectStatus(renamed, 200);
    expect(renamed.json().data).toMatchObject({ id: e.id, name: 'Production EU', slug: 'prod' });
    // The slug is immutable: another one is refused; the same one is accepted (test/gateway/put-round-trip.test.ts).
    const slugChange = await call('PUT', `/api/v1/environments/${e.id}`, { name: 'x', slug: 'other' });
    expectStatus(slugChange, 400);
    expect(slugChange.json().error.message).toContain('slug');
    expectStatus(await call('PUT', `/api/v1/environments/${e.id}`, { name: '   ' }), 400);
    expectStatus(await call('PUT', `/api/v1/environments/${e.id}`, {}), 400);
    expect((await call('GET', `/api/v1/environments/${e.id}`)).json().data).toMatchObject({
      name: 'Production EU',
      slug: 'prod',
    });

    expectStatus(await call('DELETE', `/api/v1/environments/${e.id}`), 204);
    expectStatus(await call('GET', `/api/v1/environments/${e.id}`), 404);
    expectStatus(await call('DELETE', `/api/v1/environments/${e.id}`), 404);
    expectStatus(await call('PUT', `/api/v1/environments/${e.id}`, { name: 'ghost' }), 404);
    expectStatus(await call('GET', '/api/v1/environments/not-a-uuid'), 400);

    const c = await waitForAudit(sys, root, { action: 'environment.created', resource_id: e.id });
    expect(c.details).toMatchObject({ client_id: client.id, name: 'Production', slug: 'prod' });
    const u = await waitForAudit(sys, root, { action: 'environment.updated', resource_id: e.id });
    expect(u.details).toMatchObject({ changes: { name: { from: 'Production', to: 'Production EU' } } });
    await waitForAudit(sys, root, { action: 'environment.deleted', resource_id: e.id });
  });

  it('enforces the slug rule (400), uniqueness within the client (409), and needs an existing client (404)', async () => {
    const call = api(sys, { token: root });
    const client = await createClient(sys);
    const other = await createClient(sys);
    const url = `/api/v1/clients/${client.id}/environments`;
    for (const slug of [
      '',
      'Upper',
      '-lead',
      'trail-',
      'under_score',
      'dots.no',
      'a'.repeat(64),
      'spa ce',
      'ümlaut',
      5,
    ]) {
      const res = await call('POST', url, { name: 'Bad', slug });
      expectStatus(res, 400);
      expect(res.json().error.message).toContain('slug');
    }
    expectStatus(await call('POST', url, { slug: 'no-name' }), 400);
    expectStatus(await call('POST', url, { name: 'No slug' }), 400);
    for (const slug of ['a', 'staging', 'x'.repeat(63), 'a--b', '9'])
      expectStatus(await call('POST', url, { name: 'Good', slug }), 201);
    const dup = await call('POST', url, { name: 'Again', slug: 'staging' });
    expectStatus(dup, 409);
    expect(dup.json().error.code).toBe('conflict');
    // Slugs are unique per client only.
    expectStatus(
      await call('POST', `/api/v1/clients/${other.id}/environments`, { name: 'Staging', slug: 'staging' }),
      201,
    );
    expectStatus(
      await call('POST', `/api/v1/clients/${randomUUID()}/environments`, { name: 'Orphan', slug: 'orphan' }),
      404,
    );
    expectStatus(await call('GET', `/api/v1/clients/${randomUUID()}/environments`), 404);
    expectStatus(await call('POST', '/api/v1/clients/nope/environments', { name: 'x', slug: 'x' }), 400);
  });

  it('lists a client’s environments by name, paginated, with host counts', async () => {
    const call = api(sys, { token: root });
    const client = await createClient(sys);
    const names = ['charlie', 'Alpha', 'bravo', 'Delta', 'echo'];
    const envs = [];
    for (const name of names) envs.push(await insertEnvironment(sys, client.id, name));
    const bravo = envs[2]!;
    for (let i = 0; i < 3; i++) await insertHost(sys, bravo);
    await insertEnvironment(sys, (await createClient(sys)).id, 'Aardvark of another client');

    const all = await call('GET', `/api/v1/clients/${client.id}/environments`);
    expectStatus(all, 200);
    expect(all.json().meta).toEqual({ total: 5, page: 1, per_page: 20 });
    const rows = all.json().data as EnvOut[];
    expect(rows.map((e) => e.name)).toEqual(['Alpha', 'bravo', 'charlie', 'Delta', 'echo']);
    expect(rows.find((e) => e.id === bravo.id)?.host_count).toBe(3);
    expect(rows.filter((e) => e.id !== bravo.id).every((e) => e.host_count === 0)).toBe(true);
    expect(rows.every((e) => e.client_id === client.id)).toBe(true);
    expect((await call('GET', `/api/v1/environments/${bravo.id}`)).json().data.host_count).toBe(3);

    const p1 = await call('GET', `/api/v1/clients/${client.id}/environments?per_page=2&page=1`);
    const p3 = await call('GET', `/api/v1/clients/${client.id}/environments?per_page=2&page=3`);
    expect(p1.json().meta).toEqual({ total: 5, page: 1, per_page: 2 });
    expect(p1.json().data.map((e: EnvOut) => e.name)).toEqual(['Alpha', 'bravo']);
    expect(p3.json().data.map((e: EnvOut) => e.name)).toEqual(['echo']);
    expect((await call('GET', `/api/v1/clients/${client.id}/environments?page=4&per_page=2`)).json().data).toEqual([]);
    for (const q of ['per_page=0', 'per_page=101', 'page=0', 'page=x'])
      expectStatus(await call('GET', `/api/v1/clients/${client.id}/environments?${q}`), 400);
  });

  it('refuses to delete an environment with hosts (409); without hosts its install tokens and pending agents go with it', async () => {
    const call = api(sys, { token: root });
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const host = await insertHost(sys, env);
    const refused = await call('DELETE', `/api/v1/environments/${env.id}`);
    expectStatus(refused, 409);
    expect(refused.json().error.message).toMatch(/1 host/);
    expectStatus(await call('GET', `/api/v1/environments/${env.id}`), 200);

    await sys.sql(`DELETE FROM hosts WHERE id = ?`, [host.id]);
    const tokenId = randomUUID();
    await sys.sql(
      `INSERT INTO install_tokens (id, environment_id, client_id, token_hash, expires_at) VALUES (?, ?, ?, ?, now() + interval '1 day')`,
      [tokenId, env.id, client.id, Buffer.from(randomUUID())],
    );
    const pending = await insertAgent(sys, env, { status: 'pending' });
    expectStatus(await call('DELETE', `/api/v1/environments/${env.id}`), 204);
    expect(await sys.sql(`SELECT id FROM install_tokens WHERE id = ?`, [tokenId])).toEqual([]);
    expect(await sys.sql(`SELECT id FROM agents WHERE id = ?`, [pending.id])).toEqual([]);
    const audit = await waitForAudit(sys, root, { action: 'environment.deleted', resource_id: env.id });
    expect(audit.details).toMatchObject({ client_id: client.id, name: env.name, slug: env.slug });
  });

  describe('tenant isolation', () => {
    it('a caller with a role on client A gets 404 for client B’s environments, 403 on A without the permission', async () => {
      const a = await createClient(sys);
      const b = await createClient(sys);
      const envA = await insertEnvironment(sys, a.id);
      const envB = await insertEnvironment(sys, b.id);
      const admin = api(sys, { token: (await userWith(sys, 'Admin', a.id)).token });

      // Everything on A works for A's Admin.
      expectStatus(await admin('GET', `/api/v1/clients/${a.id}/environments`), 200);
      expectStatus(await admin('GET', `/api/v1/environments/${envA.id}`), 200);
      const made = await admin('POST', `/api/v1/clients/${a.id}/environments`, { name: 'Made by A', slug: 'by-a' });
      expectStatus(made, 201);
      expectStatus(await admin('PUT', `/api/v1/environments/${envA.id}`, { name: 'Renamed by A' }), 200);
      expectStatus(await admin('DELETE', `/api/v1/environments/${made.json().data.id}`), 204);

      // B is out of reach: indistinguishable from absent.
      for (const [method, url, body] of [
        ['GET', `/api/v1/clients/${b.id}/environments`],
        ['POST', `/api/v1/clients/${b.id}/environments`, { name: 'Intruder', slug: 'intruder' }],
        ['GET', `/api/v1/environments/${envB.id}`],
        ['PUT', `/api/v1/environments/${envB.id}`, { name: 'hijacked' }],
        ['DELETE', `/api/v1/environments/${envB.id}`],
      ] as const) {
        const res = await admin(method, url, body);
        expectStatus(res, 404);
        expect(res.json().error.code).toBe('not_found');
      }
      expect((await sys.sql<{ name: string }>(`SELECT name FROM environments WHERE id = ?`, [envB.id]))[0]?.name).toBe(
        envB.name,
      );
      expect(await sys.sql(`SELECT id FROM environments WHERE client_id = ? AND slug = 'intruder'`, [b.id])).toEqual(
        [],
      );

      // A Viewer on A reads hosts but holds no environments:* permission: 403 on A, still 404 on B.
      const viewer = api(sys, { token: (await userWith(sys, 'Viewer', a.id)).token });
      expectStatus(await viewer('GET', `/api/v1/clients/${a.id}/environments`), 403);
      expectStatus(await viewer('GET', `/api/v1/environments/${envA.id}`), 403);
      expectStatus(await viewer('POST', `/api/v1/clients/${a.id}/environments`, { name: 'v', slug: 'v' }), 403);
      expectStatus(await viewer('PUT', `/api/v1/environments/${envA.id}`, { name: 'v' }), 403);
      expectStatus(await viewer('DELETE', `/api/v1/environments/${envA.id}`), 403);
      expectStatus(await viewer('GET', `/api/v1/environments/${envB.id}`), 404);
      expectStatus(await viewer('GET', `/api/v1/clients/${b.id}/environments`), 404);
      expectStatus(await viewer('DELETE', `/api/v1/environments/${envB.id}`), 404);
    });
  });
});
