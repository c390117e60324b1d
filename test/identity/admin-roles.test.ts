import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_PERMISSIONS, roleIdByName, SYSTEM_ROLES } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from './admin-support.ts';

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

interface RoleOut {
  id: string;
  name: string;
  description: string;
  permissions: string[];
  is_system: boolean;
}

const createRole = async (name: string, permissions: string[], description = 'custom'): Promise<RoleOut> => {
  const res = await api(sys, { token: root })('POST', '/api/v1/roles', { name, description, permissions });
  expectStatus(res, 201);
  return res.json().data as RoleOut;
};

describe('roles', () => {
  it('lists system roles first in their fixed order, then custom roles by name', async () => {
    await createRole(`zz-last ${sys.tag}`, ['hosts:read']);
    await createRole(`AA-first ${sys.tag}`, ['hosts:read']);
    const res = await api(sys, { token: root })('GET', '/api/v1/roles');
    expectStatus(res, 200);
    const roles = res.json().data as RoleOut[];
    expect(roles.slice(0, 8).map((r) => r.name)).toEqual(SYSTEM_ROLES.map((r) => r.name));
    expect(roles.slice(0, 8).every((r) => r.is_system)).toBe(true);
    const custom = roles.slice(8);
    expect(custom.every((r) => !r.is_system)).toBe(true);
    const names = custom.map((r) => r.name.toLowerCase());
    expect(names).toEqual([...names].sort());
    expect(roles.find((r) => r.name === 'Viewer')?.permissions.sort()).toEqual([
      'healthcheck:read',
      'hosts:read',
      'metrics:read',
    ]);
  });

  it('creates custom roles: registry-checked permissions, unique names, never system', async () => {
    const role = (
      await api(sys, { token: root })('POST', '/api/v1/roles', {
        name: `Ops ${sys.tag}`,
        description: 'operators',
        permissions: ['hosts:write', 'hosts:read', 'hosts:read'],
        is_system: true,
      })
    ).json().data as RoleOut;
    expect(role).toMatchObject({ name: `Ops ${sys.tag}`, description: 'operators', is_system: false });
    expect(role.permissions).toEqual(['hosts:read', 'hosts:write']);

    const unknown = await api(sys, { token: root })('POST', '/api/v1/roles', {
      name: `Bad ${sys.tag}`,
      description: '',
      permissions: ['hosts:read', 'hosts:fly'],
    });
    expectStatus(unknown, 400);
    expect(unknown.json().error.message).toContain('hosts:fly');
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/roles', {
        name: `ops ${sys.tag}`.toUpperCase(),
        description: '',
        permissions: [],
      }),
      409,
    );
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/roles', { name: 'Admin', description: '', permissions: [] }),
      409,
    );
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/roles', { name: '', description: '', permissions: [] }),
      400,
    );
    expectStatus(
      await api(sys, { token: root })('POST', '/api/v1/roles', { name: `NoPerms ${sys.tag}`, description: '' }),
      400,
    );

    const got = await api(sys, { token: root })('GET', `/api/v1/roles/${role.id}`);
    expectStatus(got, 200);
    expect(got.json().data).toMatchObject({ id: role.id, permissions: ['hosts:read', 'hosts:write'] });
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/roles/${crypto.randomUUID()}`), 404);
    await waitForAudit(sys, root, { action: 'role.created', resource_id: role.id });
  });

  it('refuses to modify or delete system roles (403)', async () => {
    for (const r of SYSTEM_ROLES) {
      expectStatus(await api(sys, { token: root })('PUT', `/api/v1/roles/${r.id}`, { description: 'changed' }), 403);
      expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/roles/${r.id}`), 403);
    }
    const viewer = (await api(sys, { token: root })('GET', `/api/v1/roles/${roleIdByName('Viewer')}`)).json()
      .data as RoleOut;
    expect(viewer.description).not.toBe('changed');
  });

  it('a permission change reaches every holder on their next request, and is audited with before/after', async () => {
    const role = await createRole(`Readers ${sys.tag}`, ['hosts:read']);
    const client = await createClient(sys);
    const direct = await createUser(sys);
    await assignRole(sys, direct.id, client.id, role.id);
    const member = await createUser(sys);
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `Readers team ${sys.tag}`, description: '' })
    ).json().data;
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/clients`, { client_id: client.id }),
      201,
    );
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
        user_id: member.id,
        role_id: role.id,
      }),
      201,
    );

    const holders = [await tokenFor(sys, direct), await tokenFor(sys, member)];
    for (const token of holders) expectStatus(await api(sys, { token })('GET', `/api/v1/clients/${client.id}`), 403);

    const updated = await api(sys, { token: root })('PUT', `/api/v1/roles/${role.id}`, {
      permissions: ['hosts:read', 'clients:read'],
    });
    expectStatus(updated, 200);
    expect(updated.json().data.permissions).toEqual(['clients:read', 'hosts:read']);
    for (const token of holders) expectStatus(await api(sys, { token })('GET', `/api/v1/clients/${client.id}`), 200);

    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/roles/${role.id}`, { permissions: ['hosts:read'] }),
      200,
    );
    for (const token of holders) expectStatus(await api(sys, { token })('GET', `/api/v1/clients/${client.id}`), 403);

    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/roles/${role.id}`, { permissions: ['nope:nope'] }),
      400,
    );
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/roles/${role.id}`, {}), 400);
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/roles/${role.id}`, { name: 'Engineer' }), 409);
    expectStatus(await api(sys, { token: root })('PUT', `/api/v1/roles/${crypto.randomUUID()}`, { name: 'x' }), 404);

    const entry = await waitForAudit(sys, root, { action: 'role.updated', resource_id: role.id }, (e) => {
      const perms = (e.details.changes as { permissions?: { added: string[] } } | undefined)?.permissions;
      return perms?.added.includes('clients:read') === true;
    });
    expect(entry.details).toMatchObject({
      changes: {
        permissions: {
          before: ['hosts:read'],
          after: ['clients:read', 'hosts:read'],
          added: ['clients:read'],
          removed: [],
        },
      },
    });
  });

  it('reports usage, refuses to delete a role in use (409), deletes it once unused', async () => {
    const role = await createRole(`InUse ${sys.tag}`, ['hosts:read']);
    const client = await createClient(sys);
    const u = await createUser(sys);
    await assignRole(sys, u.id, client.id, role.id);
    const member = await createUser(sys);
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: `Usage team ${sys.tag}`, description: '' })
    ).json().data;
    expectStatus(
      await api(sys, { token: root })('POST', `/api/v1/teams/${team.id}/members`, {
        user_id: member.id,
        role_id: role.id,
      }),
      201,
    );
    const sa = (
      await api(sys, { token: root })('POST', '/api/v1/service-accounts', {
        name: `usage-sa-${sys.tag}`,
        description: '',
        role_id: role.id,
        client_scope: [client.id],
      })
    ).json().data;

    const usage = await api(sys, { token: root })('GET', `/api/v1/roles/${role.id}/usage`);
    expectStatus(usage, 200);
    expect(usage.json().data).toEqual({
      role_id: role.id,
      users: [
        {
          user_id: u.id,
          email: u.email,
          display_name: expect.any(String),
          client_id: client.id,
          client_name: client.name,
          client_slug: client.slug,
        },
      ],
      teams: [
        {
          team_id: team.id,
          team_name: team.name,
          members: [{ user_id: member.id, email: member.email, display_name: expect.any(String) }],
        },
      ],
      service_accounts: [{ id: sa.id, name: sa.name, is_active: true }],
    });

    const refused = await api(sys, { token: root })('DELETE', `/api/v1/roles/${role.id}`);
    expectStatus(refused, 409);
    expect(refused.json().error.message).toContain('in use');

    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/users/${u.id}/clients/${client.id}`), 204);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/teams/${team.id}/members/${member.id}`), 204);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/service-accounts/${sa.id}`), 204);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/roles/${role.id}`), 204);
    expectStatus(await api(sys, { token: root })('GET', `/api/v1/roles/${role.id}`), 404);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/roles/${role.id}`), 404);
    await waitForAudit(sys, root, { action: 'role.deleted', resource_id: role.id });
  });

  it('a role holder cannot add to a role permissions they do not hold where it applies', async () => {
    const client = await createClient(sys);
    const roleAdmin = await createRole(`RoleAdmin ${sys.tag}`, ['roles:read', 'roles:write', 'hosts:read']);
    const caller = await createUser(sys);
    await assignRole(sys, caller.id, client.id, roleAdmin.id);
    const token = await tokenFor(sys, caller);
    // Granting itself everything through its own role: refused.
    expectStatus(
      await api(sys, { token })('PUT', `/api/v1/roles/${roleAdmin.id}`, { permissions: [...ALL_PERMISSIONS] }),
      403,
    );
    // Renaming, or dropping a permission, is fine.
    expectStatus(
      await api(sys, { token })('PUT', `/api/v1/roles/${roleAdmin.id}`, { description: 'edited by holder' }),
      200,
    );
    // A role nobody holds yet can be given anything (it grants nothing until assigned).
    expectStatus(
      await api(sys, { token })('POST', '/api/v1/roles', {
        name: `Fresh ${sys.tag}`,
        description: '',
        permissions: ['users:delete'],
      }),
      201,
    );
    // A role in use on a client where the caller holds no roles:write cannot be changed at all, not even narrowed.
    const elsewhere = await createClient(sys);
    const used = await createRole(`Used elsewhere ${sys.tag}`, ['hosts:read', 'metrics:read']);
    await assignRole(sys, (await createUser(sys)).id, elsewhere.id, used.id);
    expectStatus(await api(sys, { token })('PUT', `/api/v1/roles/${used.id}`, { permissions: ['hosts:read'] }), 403);
    expectStatus(
      await api(sys, { token })('PUT', `/api/v1/roles/${used.id}`, { description: 'edited from afar' }),
      403,
    );
    const kept = (await api(sys, { token: root })('GET', `/api/v1/roles/${used.id}`)).json().data as RoleOut;
    expect(kept.permissions).toEqual(['hosts:read', 'metrics:read']);
  });
});

describe('permissions registry', () => {
  it('answers every authenticated caller, JWT or API key, with the full registry', async () => {
    const client = await createClient(sys);
    const viewer = await userWith(sys, 'Viewer', client.id);
    const res = await api(sys, { token: viewer.token })('GET', '/api/v1/permissions');
    expectStatus(res, 200);
    const perms = res.json().data as string[];
    expect(perms).toEqual([...ALL_PERMISSIONS]);
    expect(perms).toContain('annotations:write');
    expect(perms).toContain('runbooks:execute');
    expect(perms.every((p) => /^[a-z_]+:[a-z]+$/.test(p))).toBe(true);

    const sa = (
      await api(sys, { token: root })('POST', '/api/v1/service-accounts', {
        name: `perm-sa-${sys.tag}`,
        description: '',
        role_id: roleIdByName('Viewer'),
        client_scope: [client.id],
      })
    ).json().data;
    const byKey = await api(sys, { apiKey: sa.api_key })('GET', '/api/v1/permissions');
    expectStatus(byKey, 200);
    expect(byKey.json().data).toEqual(perms);

    expectStatus(await sys.http({ method: 'GET', url: '/api/v1/permissions' }), 401);
  });
});
