import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from '../identity/admin-support.ts';

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

interface ClientOut {
  id: string;
  name: string;
  slug: string;
  created_at: string;
  updated_at: string;
}

describe('clients', () => {
  it('creates, reads, renames and deletes a client, each audited', async () => {
    const call = api(sys, { token: root });
    const created = await call('POST', '/api/v1/clients', { name: 'Acme Corp', slug: `acme-${sys.tag}` });
    expectStatus(created, 201);
    const c = created.json().data as ClientOut;
    expect(c).toMatchObject({ name: 'Acme Corp', slug: `acme-${sys.tag}` });
    expect(Object.keys(c).sort()).toEqual(['created_at', 'id', 'name', 'slug', 'updated_at']);
    expect(c.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    const got = await call('GET', `/api/v1/clients/${c.id}`);
    expectStatus(got, 200);
    expect(got.json().data).toEqual(c);

    const renamed = await call('PUT', `/api/v1/clients/${c.id}`, { name: 'Acme Inc' });
    expectStatus(renamed, 200);
    expect(renamed.json().data).toMatchObject({ id: c.id, name: 'Acme Inc', slug: c.slug });
    const slugChange = await call('PUT', `/api/v1/clients/${c.id}`, { name: 'Acme Inc', slug: 'other' });
    expectStatus(slugChange, 400);
    expect(slugChange.json().error.message).toContain('slug');
    expectStatus(await call('PUT', `/api/v1/clients/${c.id}`, { name: '' }), 400);
    expectStatus(await call('PUT', `/api/v1/clients/${crypto.randomUUID()}`, { name: 'x' }), 404);

    expectStatus(await call('DELETE', `/api/v1/clients/${c.id}`), 204);
    expectStatus(await call('GET', `/api/v1/clients/${c.id}`), 404);
    expectStatus(await call('DELETE', `/api/v1/clients/${c.id}`), 404);
    expectStatus(await call('GET', '/api/v1/clients/not-a-uuid'), 400);

    await waitForAudit(sys, root, { action: 'client.created', resource_id: c.id });
    const upd = await waitForAudit(sys, root, { action: 'client.updated', resource_id: c.id });
    expect(upd.details).toEqual({ changes: { name: { from: 'Acme Corp', to: 'Acme Inc' } } });
    await waitForAudit(sys, root, { action: 'client.deleted', resource_id: c.id });
  });

  it('enforces the slug rule (400) and slug uniqueness (409)', async () => {
    const call = api(sys, { token: root });
    const tag = sys.tag.toLowerCase();
    const bad = ['', 'Upper', '-lead', 'trail-', 'under_score', 'dots.no', 'a'.repeat(64), 'spa ce', 'ümlaut'];
    for (const slug of bad) {
      const res = await call('POST', '/api/v1/clients', { name: 'Bad', slug });
      expectStatus(res, 400);
      expect(res.json().error.code).toBe('bad_request');
      expect(res.json().error.message).toContain('slug');
    }
    const good = [`${tag}-x`.slice(0, 63), `z${tag}`, `${tag}${'9'.repeat(63 - tag.length)}`, `${tag}--double`];
    for (const slug of good) expectStatus(await call('POST', '/api/v1/clients', { name: 'Good', slug }), 201);
    // Single characters are valid slugs; they may already exist from earlier runs.
    expect([201, 409]).toContain((await call('POST', '/api/v1/clients', { name: 'One', slug: 'q' })).statusCode);
    expectStatus(await call('POST', '/api/v1/clients', { name: 'Dup', slug: `z${tag}` }), 409);
    expectStatus(await call('POST', '/api/v1/clients', { slug: `noname-${tag}` }), 400);
  });

  it('lists only the caller’s clients, paginated and sorted', async () => {
    const names = ['Charlie', 'alpha', 'Bravo'];
    const made = [];
    for (const [i, name] of names.entries())
      made.push(await createClient(sys, `${name} ${sys.tag}`).then((c) => ({ ...c, i })));
    const other = await createClient(sys);
    const u = await createUser(sys);
    for (const c of made) await assignRole(sys, u.id, c.id, roleIdByName('Client'));
    const call = api(sys, { token: await tokenFor(sys, u) });

    const byName = await call('GET', '/api/v1/clients');
    expectStatus(byName, 200);
    expect(byName.json().meta).toEqual({ total: 3, page: 1, per_page: 20 });
    expect(byName.json().data.map((c: ClientOut) => c.name)).toEqual([
      `alpha ${sys.tag}`,
      `Bravo ${sys.tag}`,
      `Charlie ${sys.tag}`,
    ]);
    expect(byName.json().data.map((c: ClientOut) => c.id)).not.toContain(other.id);

    const desc = await call('GET', '/api/v1/clients?sort=name&order=desc');
    expect(desc.json().data.map((c: ClientOut) => c.name)).toEqual([
      `Charlie ${sys.tag}`,
      `Bravo ${sys.tag}`,
      `alpha ${sys.tag}`,
    ]);
    const bySlug = await call('GET', '/api/v1/clients?sort=slug&order=asc');
    const slugs = bySlug.json().data.map((c: ClientOut) => c.slug);
    expect(slugs).toEqual([...slugs].sort());
    const byCreated = await call('GET', '/api/v1/clients?sort=created_at&order=desc');
    expect(byCreated.json().data.map((c: ClientOut) => c.id)).toEqual([...made].reverse().map((c) => c.id));

    const p1 = await call('GET', '/api/v1/clients?per_page=2&page=1');
    const p2 = await call('GET', '/api/v1/clients?per_page=2&page=2');
    expect(p1.json().meta).toEqual({ total: 3, page: 1, per_page: 2 });
    expect(p1.json().data).toHaveLength(2);
    expect(p2.json().data).toHaveLength(1);

    expectStatus(await call('GET', '/api/v1/clients?sort=color'), 400);
    expectStatus(await call('GET', '/api/v1/clients?order=up'), 400);
    expectStatus(await call('GET', '/api/v1/clients?per_page=0'), 400);
    expectStatus(await call('GET', `/api/v1/clients/${other.id}`), 404);
    // Client role has no clients:write or clients:delete.
    expectStatus(await call('PUT', `/api/v1/clients/${made[0]!.id}`, { name: 'nope' }), 403);
    expectStatus(await call('DELETE', `/api/v1/clients/${made[0]!.id}`), 403);
    expectStatus(await call('POST', '/api/v1/clients', { name: 'nope', slug: `nope-${sys.tag}` }), 403);
  });

  it('deleting a client drops the access that went through it at once (direct and team)', async () => {
    const call = api(sys, { token: root });
    const doomed = await createClient(sys);
    const direct = await createUser(sys);
    await assignRole(sys, direct.id, doomed.id, roleIdByName('Executive'));
    const member = await createUser(sys);
    const team = (await call('POST', '/api/v1/teams', { name: `Client team ${sys.tag}`, description: '' })).json().data;
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: doomed.id }), 201);
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: member.id, role_id: roleIdByName('Client') }),
      201,
    );

    const tokens = [await tokenFor(sys, direct), await tokenFor(sys, member)];
    // Their only clients:read is on the doomed client: the list answers 200 now (and caches that access map).
    for (const token of tokens) expectStatus(await api(sys, { token })('GET', '/api/v1/clients'), 200);
    expectStatus(await call('DELETE', `/api/v1/clients/${doomed.id}`), 204);
    // Without the invalidation the cached map would still grant clients:read for 15 minutes.
    for (const token of tokens) expectStatus(await api(sys, { token })('GET', '/api/v1/clients'), 403);
    const t = await call('GET', `/api/v1/teams/${team.id}`);
    expect(t.json().data.clients).toEqual([]);
    const e = await waitForAudit(sys, root, { action: 'client.deleted', resource_id: doomed.id });
    expect(e.details).toMatchObject({ name: doomed.name, slug: doomed.slug, affected_users: 2 });
  });

  it('a caller with clients:write on some client may create clients; the new client is not theirs to read', async () => {
    const home = await createClient(sys);
    const admin = await userWith(sys, 'Admin', home.id);
    const res = await api(sys, { token: admin.token })('POST', '/api/v1/clients', {
      name: 'By admin',
      slug: `by-admin-${sys.tag}`,
    });
    expectStatus(res, 201);
    expectStatus(await api(sys, { token: admin.token })('GET', `/api/v1/clients/${res.json().data.id}`), 404);
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/clients/${res.json().data.id}`), 200);
  });
});
