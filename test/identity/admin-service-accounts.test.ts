import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../actors/identity/crypto.ts';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { createClient, createUser } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from './admin-support.ts';

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

interface Created {
  id: string;
  name: string;
  api_key: string;
  api_key_prefix: string;
  created_at: string;
  client_scope: string[];
  is_active: boolean;
}

async function createSa(body: Record<string, unknown>, token = root): Promise<Created> {
  const res = await api(sys, { token })('POST', '/api/v1/service-accounts', { description: '', ...body });
  expectStatus(res, 201);
  return res.json().data as Created;
}

describe('service accounts', () => {
  it('creates a key shown once, stored only as its sha256, never listed', async () => {
    const client = await createClient(sys);
    const sa = await createSa({
      name: `ci-${sys.tag}`,
      description: 'CI pipeline',
      role_id: roleIdByName('Executive'),
      client_scope: [client.id],
    });
    expect(sa.api_key).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(sa.api_key_prefix).toBe(sa.api_key.slice(0, 12));
    expect(sa).toMatchObject({ name: `ci-${sys.tag}`, client_scope: [client.id], is_active: true });
    expect(sa.created_at).toMatch(/Z$/);

    const orm = await sys.stores.orm();
    const [row] = await orm.em
      .fork()
      .execute<{ api_key_hash: string }[]>(`SELECT api_key_hash FROM service_accounts WHERE id = ?`, [sa.id]);
    expect(row?.api_key_hash).toBe(sha256(sa.api_key));

    const got = await api(sys, { token: root })('GET', `/api/v1/service-accounts/${sa.id}`);
    expectStatus(got, 200);
    expect(got.json().data).toMatchObject({
      id: sa.id,
      description: 'CI pipeline',
      role_id: roleIdByName('Executive'),
      role_name: 'Executive',
      expires_at: null,
    });
    const list = await api(sys, { token: root })('GET', '/api/v1/service-accounts?per_page=100');
    expectStatus(list, 200);
    expect(list.json().meta).toMatchObject({ page: 1, per_page: 100 });
    expect(list.body).not.toContain(sa.api_key);
    expect(list.body).not.toContain(sha256(sa.api_key));
    expect(list.body).not.toContain('api_key_hash');
    expect(got.body).not.toContain('"api_key"');
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/service-accounts/${crypto.randomUUID()}`), 404);
    await waitForAudit(sys, root, { action: 'service_account.created', resource_id: sa.id });

    // Never used yet; using the key records when.
    expect(got.json().data.last_used_at).toBeNull();
    expectStatus(await api(sys, { apiKey: sa.api_key })('GET', `/api/v1/clients/${client.id}`), 200);
    const used = (await api(sys, { token: root })('GET', `/api/v1/service-accounts/${sa.id}`)).json().data;
    expect(used.last_used_at).toBe(new Date(sys.clock.now()).toISOString());
  });

  it('validates the body: scope, role, clients and expiry', async () => {
    const client = await createClient(sys);
    const post = (body: Record<string, unknown>) =>
      api(sys, { token: root })('POST', '/api/v1/service-accounts', { name: `v-${sys.tag}`, description: '', ...body });
    expectStatus(await post({ role_id: roleIdByName('Viewer'), client_scope: [] }), 400);
    expectStatus(await post({ role_id: roleIdByName('Viewer'), client_scope: ['*', client.id] }), 400);
    expectStatus(await post({ role_id: roleIdByName('Viewer'), client_scope: ['not-a-uuid'] }), 400);
    expectStatus(await post({ role_id: roleIdByName('Viewer') }), 400);
    expectStatus(await post({ role_id: crypto.randomUUID(), client_scope: [client.id] }), 404);
    expectStatus(await post({ role_id: roleIdByName('Viewer'), client_scope: [crypto.randomUUID()] }), 404);
    expectStatus(
      await post({
        role_id: roleIdByName('Viewer'),
        client_scope: [client.id],
        expires_at: new Date(sys.clock.now() - 1000).toISOString(),
      }),
      400,
    );
    expectStatus(
      await post({ role_id: roleIdByName('Viewer'), client_scope: [client.id], expires_at: 'tomorrow' }),
      400,
    );
  });

  it('the key works; is_active false → 401, true → works again; deleted → 401 on the next request', async () => {
    const client = await createClient(sys);
    const sa = await createSa({
      name: `toggle-${sys.tag}`,
      role_id: roleIdByName('Executive'),
      client_scope: [client.id],
    });
    const asKey = api(sys, { apiKey: sa.api_key });
    expectStatus(await asKey('GET', `/api/v1/clients/${client.id}`), 200);

    const off = await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${sa.id}`, { is_active: false });
    expectStatus(off, 200);
    expect(off.json().data.is_active).toBe(false);
    expectStatus(await asKey('GET', `/api/v1/clients/${client.id}`), 401);
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${sa.id}`, { is_active: true }), 200);
    expectStatus(await asKey('GET', `/api/v1/clients/${client.id}`), 200);

    // Role change is seen at once too.
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${sa.id}`, {
        role_id: roleIdByName('Viewer'),
        name: `renamed-${sys.tag}`,
      }),
      200,
    );
    expectStatus(await asKey('GET', `/api/v1/clients/${client.id}`), 403);
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${sa.id}`, {}), 400);
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${crypto.randomUUID()}`, { name: 'x' }),
      404,
    );

    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/service-accounts/${sa.id}`), 204);
    expectStatus(await asKey('GET', '/api/v1/permissions'), 401);
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/service-accounts/${sa.id}`), 404);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/service-accounts/${sa.id}`), 404);

    const updated = await waitForAudit(sys, root, { action: 'service_account.updated', resource_id: sa.id }, (e) => {
      const change = (e.details.changes as { is_active?: { to: boolean } } | undefined)?.is_active;
      return change?.to === false;
    });
    expect(updated.details).toMatchObject({ changes: { is_active: { from: true, to: false } } });
    await waitForAudit(sys, root, { action: 'service_account.deleted', resource_id: sa.id });
  });

  it('an expired key is refused', async () => {
    const client = await createClient(sys);
    const sa = await createSa({
      name: `exp-${sys.tag}`,
      role_id: roleIdByName('Viewer'),
      client_scope: [client.id],
      expires_at: new Date(sys.clock.now() + 60_000).toISOString(),
    });
    expectStatus(await api(sys, { apiKey: sa.api_key })('GET', '/api/v1/permissions'), 200);
    sys.clock.advance(120_000);
    expectStatus(await api(sys, { apiKey: sa.api_key })('GET', '/api/v1/permissions'), 401);
    // Extending the expiry brings it back at once.
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${sa.id}`, {
        expires_at: new Date(sys.clock.now() + 3_600_000).toISOString(),
      }),
      200,
    );
    expectStatus(await api(sys, { apiKey: sa.api_key })('GET', '/api/v1/permissions'), 200);
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${sa.id}`, { expires_at: null }),
      200,
    );
    expectStatus(await api(sys, { apiKey: sa.api_key })('GET', '/api/v1/permissions'), 200);
  });

  it('scope ["*"] reaches every client; a listed scope only its clients (others 404, writes outside it 403)', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const star = await createSa({ name: `star-${sys.tag}`, role_id: roleIdByName('Executive'), client_scope: ['*'] });
    expectStatus(await api(sys, { apiKey: star.api_key })('GET', `/api/v1/clients/${a.id}`), 200);
    expectStatus(await api(sys, { apiKey: star.api_key })('GET', `/api/v1/clients/${b.id}`), 200);

    const scoped = await createSa({
      name: `scoped-${sys.tag}`,
      role_id: roleIdByName('Executive'),
      client_scope: [a.id],
    });
    const asScoped = api(sys, { apiKey: scoped.api_key });
    expectStatus(await asScoped('GET', `/api/v1/clients/${a.id}`), 200);
    expectStatus(await asScoped('GET', `/api/v1/clients/${b.id}`), 404);
    const list = await asScoped('GET', '/api/v1/clients?per_page=100');
    expectStatus(list, 200);
    expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([a.id]);

    // An admin key scoped to A manages users on A but not on B.
    const adminKey = await createSa({ name: `admin-${sys.tag}`, role_id: roleIdByName('Admin'), client_scope: [a.id] });
    const u = await createUser(sys);
    expectStatus(
      await api(sys, { apiKey: adminKey.api_key })('POST', `/api/v1/users/${u.id}/clients`, {
        client_id: b.id,
        role_id: roleIdByName('Viewer'),
      }),
      403,
    );
    expectStatus(
      await api(sys, { apiKey: adminKey.api_key })('POST', `/api/v1/users/${u.id}/clients`, {
        client_id: a.id,
        role_id: roleIdByName('Viewer'),
      }),
      201,
    );
    expectStatus(await api(sys, { apiKey: adminKey.api_key })('GET', '/api/v1/users'), 200);
    const e = await waitForAudit(sys, root, { action: 'user.client.assigned', resource_id: u.id });
    expect(e).toMatchObject({ actor_id: adminKey.id, actor_type: 'service_account' });

    // Narrowing the scope is seen at once.
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/service-accounts/${scoped.id}`, { client_scope: [b.id] }),
      200,
    );
    expectStatus(await asScoped('GET', `/api/v1/clients/${a.id}`), 404);
    expectStatus(await asScoped('GET', `/api/v1/clients/${b.id}`), 200);
  });

  it('keys outside the caller’s reach cannot be switched off, changed or deleted', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const onB = await createSa({ name: `on-b-${sys.tag}`, role_id: roleIdByName('Executive'), client_scope: [b.id] });
    const everywhere = await createSa({
      name: `star-keep-${sys.tag}`,
      role_id: roleIdByName('Executive'),
      client_scope: ['*'],
    });
    const admin = await userWith(sys, 'Admin', a.id);
    const adminKey = await createSa({
      name: `a-admin-${sys.tag}`,
      role_id: roleIdByName('Admin'),
      client_scope: [a.id],
    });
    for (const caller of [{ token: admin.token }, { apiKey: adminKey.api_key }]) {
      const call = api(sys, caller);
      for (const target of [onB, everywhere]) {
        expectStatus(await call('PUT', `/api/v1/service-accounts/${target.id}`, { is_active: false }), 403);
        expectStatus(await call('PUT', `/api/v1/service-accounts/${target.id}`, { name: `hijacked-${sys.tag}` }), 403);
        expectStatus(await call('DELETE', `/api/v1/service-accounts/${target.id}`), 403);
      }
    }
    // Both keys still work.
    expectStatus(await api(sys, { apiKey: onB.api_key })('GET', `/api/v1/clients/${b.id}`), 200);
    expectStatus(await api(sys, { apiKey: everywhere.api_key })('GET', `/api/v1/clients/${a.id}`), 200);
    // A key scoped to A is the Admin's to manage.
    const ours = await createSa(
      { name: `on-a-${sys.tag}`, role_id: roleIdByName('Viewer'), client_scope: [a.id] },
      admin.token,
    );
    expectStatus(
      await api(sys, { token: admin.token })('PUT', `/api/v1/service-accounts/${ours.id}`, { is_active: false }),
      200,
    );
    expectStatus(await api(sys, { token: admin.token })('DELETE', `/api/v1/service-accounts/${ours.id}`), 204);
  });

  it('no privilege escalation: the role must fit within the creator’s own permissions on every client in scope', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const admin = await userWith(sys, 'Admin', a.id);
    const post = (body: Record<string, unknown>) =>
      api(sys, { token: admin.token })('POST', '/api/v1/service-accounts', {
        name: `esc-${sys.tag}`,
        description: '',
        ...body,
      });
    expectStatus(await post({ role_id: roleIdByName('Super Admin'), client_scope: [a.id] }), 403);
    expectStatus(await post({ role_id: roleIdByName('Engineer'), client_scope: [b.id] }), 403);
    expectStatus(await post({ role_id: roleIdByName('Engineer'), client_scope: ['*'] }), 403);
    const ok = await post({ role_id: roleIdByName('Engineer'), client_scope: [a.id] });
    expectStatus(ok, 201);
    const id = ok.json().data.id as string;
    expectStatus(
      await api(sys, { token: admin.token })('PUT', `/api/v1/service-accounts/${id}`, {
        role_id: roleIdByName('Super Admin'),
      }),
      403,
    );
    expectStatus(
      await api(sys, { token: admin.token })('PUT', `/api/v1/service-accounts/${id}`, { client_scope: [b.id] }),
      403,
    );
    expectStatus(
      await api(sys, { token: admin.token })('PUT', `/api/v1/service-accounts/${id}`, { description: 'fine' }),
      200,
    );
    // A Team Lead reads service accounts but cannot create them.
    const lead = await userWith(sys, 'Team Lead', a.id);
    expectStatus(await api(sys, { token: lead.token })('GET', '/api/v1/service-accounts'), 200);
    expectStatus(
      await api(sys, { token: lead.token })('POST', '/api/v1/service-accounts', {
        name: 'x',
        description: '',
        role_id: roleIdByName('Viewer'),
        client_scope: [a.id],
      }),
      403,
    );
    expectStatus(await api(sys, { token: lead.token })('DELETE', `/api/v1/service-accounts/${id}`), 403);
  });
});
