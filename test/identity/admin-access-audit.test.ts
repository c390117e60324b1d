import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName, SYSTEM_ROLES } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith } from './admin-support.ts';

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

const perms = (name: string): string[] => [...(SYSTEM_ROLES.find((r) => r.name === name)?.permissions ?? [])];

describe('access audit', () => {
  it('by user: each client with merged permissions and every grant (direct, or team with its name)', async () => {
    const a = await createClient(sys, `AA ${sys.tag}`);
    const b = await createClient(sys, `BB ${sys.tag}`);
    const u = await createUser(sys);
    await assignRole(sys, u.id, a.id, roleIdByName('Viewer'));
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `Audit team ${sys.tag}`, description: '' })
    ).json().data;
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
      user_id: u.id,
      role_id: roleIdByName('Executive'),
    });
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: a.id });
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: b.id });

    const res = await api(sys, { token: root })('GET', `/api/v1/admin/access-audit/by-user/${u.id}`);
    expectStatus(res, 200);
    const data = res.json().data;
    expect(data.user).toMatchObject({ id: u.id, email: u.email, status: 'active', is_super_admin: false });
    expect(data.clients).toHaveLength(2);
    const onA = data.clients.find((c: { client_id: string }) => c.client_id === a.id);
    expect(onA).toMatchObject({ client_name: a.name, client_slug: a.slug });
    expect(onA.grants).toEqual([
      {
        source: 'direct',
        team_id: null,
        team_name: null,
        role_id: roleIdByName('Viewer'),
        role_name: 'Viewer',
        permissions: expect.arrayContaining(perms('Viewer')),
      },
      {
        source: 'team',
        team_id: team.id,
        team_name: team.name,
        role_id: roleIdByName('Executive'),
        role_name: 'Executive',
        permissions: expect.arrayContaining(perms('Executive')),
      },
    ]);
    expect([...onA.permissions].sort()).toEqual([...new Set([...perms('Viewer'), ...perms('Executive')])].sort());
    const onB = data.clients.find((c: { client_id: string }) => c.client_id === b.id);
    expect(onB.grants.map((g: { source: string }) => g.source)).toEqual(['team']);

    expectStatus(
      await api(sys, { token: root })('GET', `/api/v1/admin/access-audit/by-user/${crypto.randomUUID()}`),
      404,
    );

    // A Team Lead of client A (users:read, roles:read there) sees the user's access on A only.
    const lead = await userWith(sys, 'Team Lead', a.id);
    const scoped = await api(sys, { token: lead.token })('GET', `/api/v1/admin/access-audit/by-user/${u.id}`);
    expectStatus(scoped, 200);
    expect(scoped.json().data.clients.map((c: { client_id: string }) => c.client_id)).toEqual([a.id]);
    const engineer = await userWith(sys, 'Engineer', a.id);
    expectStatus(await api(sys, { token: engineer.token })('GET', `/api/v1/admin/access-audit/by-user/${u.id}`), 403);
  });

  it('by client: every user reaching the client with the same breakdown, plus service accounts', async () => {
    const c = await createClient(sys);
    const direct = await createUser(sys);
    await assignRole(sys, direct.id, c.id, roleIdByName('Client'));
    const member = await createUser(sys);
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `By client ${sys.tag}`, description: '' })
    ).json().data;
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
      user_id: member.id,
      role_id: roleIdByName('Engineer'),
    });
    await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: c.id });
    const sa = (
      await api(sys, { token: root })('POST', '/api/v1/service-accounts', {
        name: `bc-${sys.tag}`,
        description: '',
        role_id: roleIdByName('Viewer'),
        client_scope: [c.id],
      })
    ).json().data;

    const res = await api(sys, { token: root })('GET', `/api/v1/admin/access-audit/by-client/${c.id}`);
    expectStatus(res, 200);
    const data = res.json().data;
    expect(data.client).toEqual({ id: c.id, name: c.name, slug: c.slug });
    expect(data.users).toHaveLength(2);
    const d = data.users.find((x: { user_id: string }) => x.user_id === direct.id);
    expect(d.grants).toEqual([
      {
        source: 'direct',
        team_id: null,
        team_name: null,
        role_id: roleIdByName('Client'),
        role_name: 'Client',
        permissions: expect.any(Array),
      },
    ]);
    expect([...d.permissions].sort()).toEqual(perms('Client').sort());
    const m = data.users.find((x: { user_id: string }) => x.user_id === member.id);
    expect(m.grants).toEqual([
      {
        source: 'team',
        team_id: team.id,
        team_name: team.name,
        role_id: roleIdByName('Engineer'),
        role_name: 'Engineer',
        permissions: expect.any(Array),
      },
    ]);
    expect(data.service_accounts.find((s: { id: string }) => s.id === sa.id)).toMatchObject({
      name: sa.name,
      all_clients: false,
      role_name: 'Viewer',
      is_active: true,
    });

    expectStatus(
      await api(sys, { token: root })('GET', `/api/v1/admin/access-audit/by-client/${crypto.randomUUID()}`),
      404,
    );
    expectStatus(await api(sys, { token: root })('GET', '/api/v1/admin/access-audit/by-client/nope'), 400);
  });

  it('by client needs roles:read or clients:read on that very client', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const exec = await userWith(sys, 'Executive', a.id); // clients:read on A
    const lead = await userWith(sys, 'Team Lead', a.id); // roles:read on A
    const viewer = await userWith(sys, 'Viewer', a.id); // neither
    expectStatus(await api(sys, { token: exec.token })('GET', `/api/v1/admin/access-audit/by-client/${a.id}`), 200);
    expectStatus(await api(sys, { token: lead.token })('GET', `/api/v1/admin/access-audit/by-client/${a.id}`), 200);
    expectStatus(await api(sys, { token: viewer.token })('GET', `/api/v1/admin/access-audit/by-client/${a.id}`), 403);
    expectStatus(await api(sys, { token: exec.token })('GET', `/api/v1/admin/access-audit/by-client/${b.id}`), 403);
    expectStatus(await api(sys, { token: lead.token })('GET', `/api/v1/admin/access-audit/by-client/${b.id}`), 403);
  });
});
