import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SavedSearch } from '../../contracts/domains/fleet-search.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from '../identity/admin-support.ts';

let sys: TestSystem;
let root: string;
let rootId: string;
let owner: { id: string; token: string };
let other: { id: string; token: string };
let viewer: string;

beforeAll(async () => {
  ({ sys, root, rootId } = await startAdminSystem());
  const client = await createClient(sys);
  const o = await userWith(sys, 'Engineer', client.id);
  const x = await userWith(sys, 'Engineer', client.id);
  owner = { id: o.user.id, token: o.token };
  other = { id: x.user.id, token: x.token };
  viewer = (await userWith(sys, 'Viewer', client.id)).token;
});
afterAll(() => sys?.stop());

describe('saved searches', () => {
  it('creates, reads, replaces and deletes a search, each audited', async () => {
    const call = api(sys, { token: owner.token });
    const created = await call('POST', '/api/v1/saved-searches', {
      name: '  Prod web  ',
      query: 'tag.env = "prod" AND service.name = "nginx"',
      description: 'web fleet',
    });
    expectStatus(created, 201);
    const s = created.json().data as SavedSearch;
    expect(s).toMatchObject({
      user_id: owner.id,
      name: 'Prod web',
      query: 'tag.env = "prod" AND service.name = "nginx"',
      description: 'web fleet',
      is_shared: false,
    });
    expect(Object.keys(s).sort()).toEqual([
      'created_at',
      'description',
      'id',
      'is_shared',
      'name',
      'query',
      'updated_at',
      'user_id',
    ]);
    expect(s.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const got = await call('GET', `/api/v1/saved-searches/${s.id}`);
    expectStatus(got, 200);
    expect(got.json().data).toEqual(s);

    const put = await call('PUT', `/api/v1/saved-searches/${s.id}`, {
      name: 'Prod web (shared)',
      query: 'tag.env = "prod"',
      is_shared: true,
    });
    expectStatus(put, 200);
    expect(put.json().data).toMatchObject({
      id: s.id,
      user_id: owner.id,
      name: 'Prod web (shared)',
      query: 'tag.env = "prod"',
      description: '',
      is_shared: true,
    });

    expectStatus(await call('DELETE', `/api/v1/saved-searches/${s.id}`), 204);
    expectStatus(await call('GET', `/api/v1/saved-searches/${s.id}`), 404);
    expectStatus(await call('DELETE', `/api/v1/saved-searches/${s.id}`), 404);

    await waitForAudit(sys, root, { action: 'saved_search.created', resource_id: s.id });
    const upd = await waitForAudit(sys, root, { action: 'saved_search.updated', resource_id: s.id });
    expect(upd.details).toMatchObject({
      changes: { name: { from: 'Prod web', to: 'Prod web (shared)' }, is_shared: { from: false, to: true } },
    });
    await waitForAudit(sys, root, { action: 'saved_search.deleted', resource_id: s.id });
  });

  it('validates the query before saving, with the same text as /search/validate', async () => {
    const call = api(sys, { token: owner.token });
    for (const query of ['host.cpu_cores = "4"', 'label.region = ', '', 'host.os = "x" host.arch = "y"']) {
      const validated = (await call('POST', '/api/v1/search/validate', { query })).json().data as {
        valid: boolean;
        error: string;
      };
      expect(validated.valid).toBe(false);
      const res = await call('POST', '/api/v1/saved-searches', { name: 'bad', query });
      expectStatus(res, 400);
      expect(res.json().error).toMatchObject({ code: 'bad_request', message: validated.error });
    }
    const ok = (await call('POST', '/api/v1/saved-searches', { name: 'ok', query: 'host.os = "linux"' })).json()
      .data as SavedSearch;
    const bad = await call('PUT', `/api/v1/saved-searches/${ok.id}`, { name: 'ok', query: 'host.os =' });
    expectStatus(bad, 400);
    expect(bad.json().error.message).toBe(`expected a value after '=' at position 10`);
    // Nothing half-written.
    expect((await call('GET', `/api/v1/saved-searches/${ok.id}`)).json().data.query).toBe('host.os = "linux"');
    for (const body of [
      { query: 'host.os = "x"' },
      { name: '', query: 'host.os = "x"' },
      { name: 'x' },
      { name: 'x', query: 'host.os = "x"', is_shared: 'yes' },
      { name: 'x'.repeat(201), query: 'host.os = "x"' },
    ]) {
      expectStatus(await call('POST', '/api/v1/saved-searches', body), 400);
    }
  });

  it('lists own and shared searches; private ones are visible to their owner and super admins only', async () => {
    const mine = api(sys, { token: owner.token });
    const theirs = api(sys, { token: other.token });
    const admin = api(sys, { token: root });
    const priv = (
      await mine('POST', '/api/v1/saved-searches', { name: `aa private ${sys.tag}`, query: 'host.os = "linux"' })
    ).json().data as SavedSearch;
    const shared = (
      await mine('POST', '/api/v1/saved-searches', {
        name: `ab shared ${sys.tag}`,
        query: 'host.os = "linux"',
        is_shared: true,
      })
    ).json().data as SavedSearch;
    const otherPriv = (
      await theirs('POST', '/api/v1/saved-searches', { name: `ac other ${sys.tag}`, query: 'tag.x EXISTS' })
    ).json().data as SavedSearch;

    const listOf = async (call: typeof mine): Promise<string[]> => {
      const ids: string[] = [];
      for (let page = 1; ; page++) {
        const res = await call('GET', `/api/v1/saved-searches?per_page=100&page=${page}`);
        expectStatus(res, 200);
        const body = res.json() as { data: SavedSearch[]; meta: { total: number } };
        ids.push(...body.data.map((s) => s.id));
        if (ids.length >= body.meta.total || body.data.length === 0) return ids;
      }
    };
    const ownerList = await listOf(mine);
    expect(ownerList).toEqual(expect.arrayContaining([priv.id, shared.id]));
    expect(ownerList).not.toContain(otherPriv.id);
    const otherList = await listOf(theirs);
    expect(otherList).toEqual(expect.arrayContaining([shared.id, otherPriv.id]));
    expect(otherList).not.toContain(priv.id);
    // The super admin's list is their own plus the shared ones, like everyone's; private ones open by id.
    const adminList = await listOf(admin);
    expect(adminList).toContain(shared.id);
    expect(adminList).not.toContain(priv.id);

    expectStatus(await theirs('GET', `/api/v1/saved-searches/${shared.id}`), 200);
    expectStatus(await theirs('GET', `/api/v1/saved-searches/${priv.id}`), 404);
    expectStatus(await admin('GET', `/api/v1/saved-searches/${priv.id}`), 200);
    expectStatus(await theirs('GET', `/api/v1/saved-searches/${crypto.randomUUID()}`), 404);
    expectStatus(await theirs('GET', '/api/v1/saved-searches/not-a-uuid'), 400);

    // Paged and ordered by name.
    const page = await mine('GET', '/api/v1/saved-searches?per_page=1');
    expect(page.json().meta).toMatchObject({ page: 1, per_page: 1 });
    expect(page.json().data).toHaveLength(1);
    expectStatus(await mine('GET', '/api/v1/saved-searches?per_page=101'), 400);
  });

  it('lets only the owner or a super admin change or delete one', async () => {
    const mine = api(sys, { token: owner.token });
    const theirs = api(sys, { token: other.token });
    const admin = api(sys, { token: root });
    const shared = (
      await mine('POST', '/api/v1/saved-searches', { name: 'team view', query: 'host.os = "linux"', is_shared: true })
    ).json().data as SavedSearch;
    const priv = (
      await mine('POST', '/api/v1/saved-searches', { name: 'mine only', query: 'host.os = "linux"' })
    ).json().data as SavedSearch;
    const body = { name: 'hijacked', query: 'host.os = "windows"', is_shared: true };
    expectStatus(await theirs('PUT', `/api/v1/saved-searches/${shared.id}`, body), 403);
    expectStatus(await theirs('DELETE', `/api/v1/saved-searches/${shared.id}`), 403);
    expectStatus(await theirs('PUT', `/api/v1/saved-searches/${priv.id}`, body), 404);
    expectStatus(await theirs('DELETE', `/api/v1/saved-searches/${priv.id}`), 404);
    expect((await mine('GET', `/api/v1/saved-searches/${shared.id}`)).json().data.name).toBe('team view');

    const byAdmin = await admin('PUT', `/api/v1/saved-searches/${priv.id}`, {
      name: 'fixed by admin',
      query: 'host.os = "linux"',
    });
    expectStatus(byAdmin, 200);
    // The owner stays the owner.
    expect(byAdmin.json().data).toMatchObject({ user_id: owner.id, name: 'fixed by admin' });
    expect(byAdmin.json().data.user_id).not.toBe(rootId);
    expectStatus(await admin('DELETE', `/api/v1/saved-searches/${shared.id}`), 204);
    expectStatus(await mine('GET', `/api/v1/saved-searches/${shared.id}`), 404);
  });

  it('needs search:read to read and search:write to save', async () => {
    const call = api(sys, { token: viewer });
    expectStatus(await call('GET', '/api/v1/saved-searches'), 403);
    expectStatus(await call('POST', '/api/v1/saved-searches', { name: 'x', query: 'host.os = "x"' }), 403);
    expectStatus(await api(sys, {})('GET', '/api/v1/saved-searches'), 401);
  });
});
