import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from './admin-support.ts';

let sys: TestSystem;
let root: string;

// Default e-mail settings: no SMTP host and no hosted-provider key.
beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

const newTeam = async (name: string, description = ''): Promise<{ id: string; name: string }> => {
  const res = await api(sys, { token: root })('POST', '/api/v1/teams', { name, description });
  expectStatus(res, 201);
  return res.json().data;
};

describe('teams', () => {
  it('creates, lists, reads, updates and deletes teams with 400/404/409 cases', async () => {
    const call = api(sys, { token: root });
    const created = await call('POST', '/api/v1/teams', {
      name: `Platform ${sys.tag}`,
      description: 'platform people',
    });
    expectStatus(created, 201);
    const team = created.json().data;
    expect(team).toMatchObject({
      name: `Platform ${sys.tag}`,
      description: 'platform people',
      members: [],
      clients: [],
    });
    expectStatus(await call('POST', '/api/v1/teams', { name: `PLATFORM ${sys.tag}`, description: '' }), 409);
    expectStatus(await call('POST', '/api/v1/teams', { description: 'no name' }), 400);

    const list = await call('GET', '/api/v1/teams?per_page=100');
    expectStatus(list, 200);
    expect(list.json().meta).toMatchObject({ page: 1, per_page: 100 });
    expect(list.json().meta.total).toBeGreaterThanOrEqual(1);
    const paged = await call('GET', '/api/v1/teams?per_page=1&page=1');
    expect(paged.json().data).toHaveLength(1);

    const updated = await call('PUT', `/api/v1/teams/${team.id}`, { name: `Platform Eng ${sys.tag}` });
    expectStatus(updated, 200);
    expect(updated.json().data).toMatchObject({ name: `Platform Eng ${sys.tag}`, description: 'platform people' });
    expectStatus(await call('PUT', `/api/v1/teams/${team.id}`, {}), 400);
    const other = await newTeam(`Other ${sys.tag}`);
    expectStatus(await call('PUT', `/api/v1/teams/${other.id}`, { name: `platform eng ${sys.tag}` }), 409);
    expectStatus(await call('GET', `/api/v1/teams/${crypto.randomUUID()}`), 404);
    expectStatus(await call('PUT', `/api/v1/teams/${crypto.randomUUID()}`, { name: 'x' }), 404);

    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}`), 204);
    expectStatus(await call('GET', `/api/v1/teams/${team.id}`), 404);
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}`), 404);

    for (const action of ['team.created', 'team.updated', 'team.deleted'])
      await waitForAudit(sys, root, { action, resource_id: team.id });
  });

  it('members and clients: add, change, remove, each felt by the member on the next request', async () => {
    const call = api(sys, { token: root });
    const client = await createClient(sys);
    const team = await newTeam(`Access ${sys.tag}`);
    // Readable clients elsewhere, so another client out of reach is a 404 (not a 403 for holding no clients:read at all).
    const u = await createUser(sys);
    await assignRole(sys, u.id, (await createClient(sys)).id, roleIdByName('Executive'));
    const token = await tokenFor(sys, u);
    const asUser = api(sys, { token });

    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 404); // out of scope; access map cached
    const added = await call('POST', `/api/v1/teams/${team.id}/members`, {
      user_id: u.id,
      role_id: roleIdByName('Executive'),
    });
    expectStatus(added, 201);
    expect(added.json().data.members).toEqual([
      {
        user_id: u.id,
        email: u.email,
        display_name: expect.any(String),
        role_id: roleIdByName('Executive'),
        role_name: 'Executive',
      },
    ]);
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: u.id, role_id: roleIdByName('Viewer') }),
      409,
    );
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 404); // team has no client yet

    const linked = await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: client.id });
    expectStatus(linked, 201);
    expect(linked.json().data.clients).toEqual([{ client_id: client.id, name: client.name, slug: client.slug }]);
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: client.id }), 409);
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 200);

    // Member role changed to one without clients:read: 403 at once (the client is in scope, the permission is not).
    const changed = await call('PUT', `/api/v1/teams/${team.id}/members/${u.id}`, { role_id: roleIdByName('Viewer') });
    expectStatus(changed, 200);
    expect(changed.json().data.members[0].role_name).toBe('Viewer');
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 403);
    expectStatus(
      await call('PUT', `/api/v1/teams/${team.id}/members/${u.id}`, { role_id: roleIdByName('Executive') }),
      200,
    );
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 200);

    // Unlinking the client removes the access at once.
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}/clients/${client.id}`), 204);
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 404);
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}/clients/${client.id}`), 404);
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: client.id }), 201);
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 200);

    // Removing the member removes the access at once.
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}/members/${u.id}`), 204);
    expectStatus(await asUser('GET', `/api/v1/clients/${client.id}`), 404);
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}/members/${u.id}`), 404);
    expectStatus(
      await call('PUT', `/api/v1/teams/${team.id}/members/${u.id}`, { role_id: roleIdByName('Viewer') }),
      404,
    );

    // 404s for unknown references, 400 for malformed ones.
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, {
        user_id: crypto.randomUUID(),
        role_id: roleIdByName('Viewer'),
      }),
      404,
    );
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: u.id, role_id: crypto.randomUUID() }),
      404,
    );
    expectStatus(
      await call('POST', `/api/v1/teams/${crypto.randomUUID()}/members`, {
        user_id: u.id,
        role_id: roleIdByName('Viewer'),
      }),
      404,
    );
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: crypto.randomUUID() }), 404);
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: 'nope' }), 400);

    for (const action of [
      'team.member.added',
      'team.member.updated',
      'team.member.removed',
      'team.client.added',
      'team.client.removed',
    ])
      await waitForAudit(sys, root, { action, resource_id: team.id });
    const e = await waitForAudit(sys, root, { action: 'team.member.added', resource_id: team.id });
    expect(e.details).toMatchObject({ user_id: u.id, role_id: roleIdByName('Executive') });
  });

  it('deleting a team drops its members’ access through it at once', async () => {
    const call = api(sys, { token: root });
    const client = await createClient(sys);
    const team = await newTeam(`Doomed ${sys.tag}`);
    const u = await createUser(sys);
    await assignRole(sys, u.id, (await createClient(sys)).id, roleIdByName('Executive'));
    const token = await tokenFor(sys, u);
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: client.id }), 201);
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: u.id, role_id: roleIdByName('Client') }),
      201,
    );
    expectStatus(await api(sys, { token })('GET', `/api/v1/clients/${client.id}`), 200);
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}`), 204);
    expectStatus(await api(sys, { token })('GET', `/api/v1/clients/${client.id}`), 404);
    const detail = await call('GET', `/api/v1/users/${u.id}`);
    expect(detail.json().data.teams).toEqual([]);
    const e = await waitForAudit(sys, root, { action: 'team.deleted', resource_id: team.id });
    expect(e.details).toMatchObject({ member_ids: [u.id], client_ids: [client.id] });
  });

  it('client links and memberships respect the caller’s own clients and permissions', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const admin = await userWith(sys, 'Admin', a.id);
    const call = api(sys, { token: admin.token });
    const team = (await call('POST', '/api/v1/teams', { name: `Admin team ${sys.tag}`, description: '' })).json().data;
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: b.id }), 403);
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: a.id }), 201);
    const u = await createUser(sys);
    // Super Admin on client A carries permissions an Admin does not hold.
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: u.id, role_id: roleIdByName('Super Admin') }),
      403,
    );
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: u.id, role_id: roleIdByName('Engineer') }),
      201,
    );
    // Admins have no teams:delete.
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}`), 403);

    // A team spanning client B: the Admin of A sees only A among its clients and cannot add members there.
    expectStatus(await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: b.id }), 201);
    const seen = await call('GET', `/api/v1/teams/${team.id}`);
    expect(seen.json().data.clients.map((c: { client_id: string }) => c.client_id)).toEqual([a.id]);
    const v = await createUser(sys);
    expectStatus(
      await call('POST', `/api/v1/teams/${team.id}/members`, { user_id: v.id, role_id: roleIdByName('Viewer') }),
      403,
    );
    expectStatus(await call('DELETE', `/api/v1/teams/${team.id}/clients/${b.id}`), 403);
  });
});

describe('teams of another client', () => {
  it('an Admin of client A cannot rename a team linked to client B or change its members', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const admin = await userWith(sys, 'Admin', a.id);
    const call = api(sys, { token: admin.token });
    const member = await createUser(sys);
    const theirs = await newTeam(`B team ${sys.tag}`);
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${theirs.id}/clients`, { client_id: b.id }),
      201,
    );
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${theirs.id}/members`, {
        user_id: member.id,
        role_id: roleIdByName('Viewer'),
      }),
      201,
    );

    expectStatus(await call('PUT', `/api/v1/teams/${theirs.id}`, { name: `Hijacked ${sys.tag}` }), 403);
    expectStatus(
      await call('PUT', `/api/v1/teams/${theirs.id}/members/${member.id}`, { role_id: roleIdByName('Viewer') }),
      403,
    );
    expectStatus(await call('DELETE', `/api/v1/teams/${theirs.id}/members/${member.id}`), 403);
    const after = (await api(sys, { token: root })('GET', `/api/v1/teams/${theirs.id}`)).json().data;
    expect(after.name).toBe(theirs.name);
    expect(after.members.map((m: { user_id: string }) => m.user_id)).toEqual([member.id]);

    // A team on A only is the Admin's to change.
    const ours = await newTeam(`A team ${sys.tag}`);
    expectStatus(await api(sys, { token: root })('POST', `/api/v1/teams/${ours.id}/clients`, { client_id: a.id }), 201);
    expectStatus(
      await call('POST', `/api/v1/teams/${ours.id}/members`, { user_id: member.id, role_id: roleIdByName('Viewer') }),
      201,
    );
    expectStatus(await call('PUT', `/api/v1/teams/${ours.id}`, { description: 'ours' }), 200);
    expectStatus(await call('DELETE', `/api/v1/teams/${ours.id}/members/${member.id}`), 204);
  });
});

describe('admin password reset without an e-mail sender', () => {
  it('answers 409 with a message naming the missing configuration', async () => {
    const u = await createUser(sys);
    const res = await api(sys, { token: root })('POST', `/api/v1/users/${u.id}/reset-password`);
    expectStatus(res, 409);
    expect(res.json().error.message).toMatch(/e-mail sender/);
  });
});
