import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, tokenFor, type TestUser } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, type Method } from './admin-support.ts';

/**
 * Every system role, granted on one client (A), against representative routes. The expected statuses are written
 * from the role table of docs/api/identity.md#system-roles, not derived from the code's role definitions, so a
 * drift in either shows here.
 */

let sys: TestSystem;
let root: string;
let clientA: { id: string; name: string; slug: string };
let clientB: { id: string; name: string; slug: string };

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  clientA = await createClient(sys);
  clientB = await createClient(sys);
});
afterAll(() => sys?.stop());

type RoleName =
  'Super Admin' | 'Admin' | 'Team Lead' | 'Engineer' | 'Executive' | 'Viewer' | 'Client' | 'Client Engineer';
const ROLES: RoleName[] = [
  'Super Admin',
  'Admin',
  'Team Lead',
  'Engineer',
  'Executive',
  'Viewer',
  'Client',
  'Client Engineer',
];

interface Probe {
  name: string;
  /** Builds the request (creating whatever fresh target it needs) for a caller holding `role` on client A. */
  request: (caller: TestUser, role: RoleName) => Promise<{ method: Method; url: string; payload?: unknown }>;
  /** Success status; any other expectation is 403. */
  ok: number;
  /** Roles for which the request succeeds, per the role table (docs/api/identity.md#system-roles). */
  allowed: RoleName[];
}

const ALL = ROLES;
const SA_ADMIN: RoleName[] = ['Super Admin', 'Admin'];
const SA_ADMIN_LEAD: RoleName[] = ['Super Admin', 'Admin', 'Team Lead'];
const CLIENT_READERS: RoleName[] = ['Super Admin', 'Admin', 'Executive', 'Client', 'Client Engineer'];
let seq = 0;
const unique = (p: string): string => `${p}-${sys.tag}-${++seq}`;

const probes: Probe[] = [
  {
    name: 'GET /users',
    ok: 200,
    allowed: SA_ADMIN_LEAD,
    request: async () => ({ method: 'GET', url: '/api/v1/users' }),
  },
  {
    name: 'POST /users',
    ok: 201,
    allowed: SA_ADMIN,
    request: async () => ({
      method: 'POST',
      url: '/api/v1/users',
      payload: { email: `${unique('m')}@example.com`, display_name: 'Matrix' },
    }),
  },
  {
    name: 'GET /users/:id',
    ok: 200,
    allowed: SA_ADMIN_LEAD,
    request: async () => ({ method: 'GET', url: `/api/v1/users/${(await createUser(sys)).id}` }),
  },
  {
    name: 'DELETE /users/:id',
    ok: 204,
    allowed: SA_ADMIN,
    request: async () => ({ method: 'DELETE', url: `/api/v1/users/${(await createUser(sys)).id}` }),
  },
  {
    name: 'GET /roles',
    ok: 200,
    allowed: SA_ADMIN_LEAD,
    request: async () => ({ method: 'GET', url: '/api/v1/roles' }),
  },
  {
    name: 'POST /roles',
    ok: 201,
    allowed: ['Super Admin'],
    request: async () => ({
      method: 'POST',
      url: '/api/v1/roles',
      payload: { name: unique('role'), description: '', permissions: ['hosts:read'] },
    }),
  },
  {
    name: 'DELETE /roles/:id',
    ok: 204,
    allowed: ['Super Admin'],
    request: async () => {
      const role = (
        await api(sys, { token: root })('POST', '/api/v1/roles', {
          name: unique('doomed'),
          description: '',
          permissions: [],
        })
      ).json().data;
      return { method: 'DELETE', url: `/api/v1/roles/${role.id}` };
    },
  },
  {
    name: 'GET /teams',
    ok: 200,
    allowed: SA_ADMIN_LEAD,
    request: async () => ({ method: 'GET', url: '/api/v1/teams' }),
  },
  {
    name: 'POST /teams',
    ok: 201,
    allowed: SA_ADMIN,
    request: async () => ({ method: 'POST', url: '/api/v1/teams', payload: { name: unique('team'), description: '' } }),
  },
  {
    name: 'DELETE /teams/:id',
    ok: 204,
    allowed: ['Super Admin'],
    request: async () => {
      const team = (
        await api(sys, { token: root })('POST', '/api/v1/teams', { name: unique('doomed'), description: '' })
      ).json().data;
      return { method: 'DELETE', url: `/api/v1/teams/${team.id}` };
    },
  },
  {
    name: 'GET /audit-log',
    ok: 200,
    allowed: SA_ADMIN_LEAD,
    request: async () => ({ method: 'GET', url: '/api/v1/audit-log' }),
  },
  {
    name: 'GET /clients',
    ok: 200,
    allowed: CLIENT_READERS,
    request: async () => ({ method: 'GET', url: '/api/v1/clients' }),
  },
  {
    name: 'GET /clients/:A',
    ok: 200,
    allowed: CLIENT_READERS,
    request: async () => ({ method: 'GET', url: `/api/v1/clients/${clientA.id}` }),
  },
  {
    name: 'POST /clients',
    ok: 201,
    allowed: SA_ADMIN,
    request: async () => ({ method: 'POST', url: '/api/v1/clients', payload: { name: 'Matrix', slug: unique('mx') } }),
  },
  {
    name: 'PUT /clients/:A',
    ok: 200,
    allowed: SA_ADMIN,
    request: async () => ({ method: 'PUT', url: `/api/v1/clients/${clientA.id}`, payload: { name: clientA.name } }),
  },
  {
    name: 'DELETE /clients/:id',
    ok: 204,
    allowed: SA_ADMIN,
    request: async (caller, role) => {
      // A fresh client on which the caller holds the same role.
      const doomed = await createClient(sys);
      await assignRole(sys, caller.id, doomed.id, roleIdByName(role));
      return { method: 'DELETE', url: `/api/v1/clients/${doomed.id}` };
    },
  },
  {
    name: 'GET /permissions',
    ok: 200,
    allowed: ALL,
    request: async () => ({ method: 'GET', url: '/api/v1/permissions' }),
  },
  {
    name: 'GET /service-accounts',
    ok: 200,
    allowed: SA_ADMIN_LEAD,
    request: async () => ({ method: 'GET', url: '/api/v1/service-accounts' }),
  },
  {
    name: 'POST /service-accounts',
    ok: 201,
    allowed: SA_ADMIN,
    request: async () => ({
      method: 'POST',
      url: '/api/v1/service-accounts',
      payload: { name: unique('sa'), description: '', role_id: roleIdByName('Viewer'), client_scope: [clientA.id] },
    }),
  },
  {
    name: 'POST /users/:id/clients (on A)',
    ok: 201,
    allowed: SA_ADMIN,
    request: async () => ({
      method: 'POST',
      url: `/api/v1/users/${(await createUser(sys)).id}/clients`,
      payload: { client_id: clientA.id, role_id: roleIdByName('Viewer') },
    }),
  },
  {
    name: 'GET /admin/access-audit/by-client/:A',
    ok: 200,
    allowed: [...SA_ADMIN_LEAD, 'Executive', 'Client', 'Client Engineer'],
    request: async () => ({ method: 'GET', url: `/api/v1/admin/access-audit/by-client/${clientA.id}` }),
  },
];

describe.each(ROLES)('role %s on one client', (role) => {
  let caller: TestUser;
  let token: string;

  beforeAll(async () => {
    caller = await createUser(sys);
    await assignRole(sys, caller.id, clientA.id, roleIdByName(role));
    token = await tokenFor(sys, caller);
  });

  it('never reaches client B', async () => {
    const call = api(sys, { token });
    const readsClients = CLIENT_READERS.includes(role);
    // Out of scope: 404 for a caller who reads clients at all, 403 for one who reads none.
    expectStatus(await call('GET', `/api/v1/clients/${clientB.id}`), readsClients ? 404 : 403);
    if (readsClients) {
      const list = await call('GET', '/api/v1/clients?per_page=100');
      expectStatus(list, 200);
      expect(list.json().data.map((c: { id: string }) => c.id)).toEqual([clientA.id]);
      expect(list.json().meta.total).toBe(1);
    }
    const target = await createUser(sys);
    expectStatus(
      await call('POST', `/api/v1/users/${target.id}/clients`, {
        client_id: clientB.id,
        role_id: roleIdByName('Viewer'),
      }),
      403,
    );
    expectStatus(
      await call('PUT', `/api/v1/clients/${clientB.id}`, { name: 'hijacked' }),
      SA_ADMIN.includes(role) ? 404 : 403,
    );
    expectStatus(await call('DELETE', `/api/v1/clients/${clientB.id}`), SA_ADMIN.includes(role) ? 404 : 403);
    expectStatus(await call('GET', `/api/v1/admin/access-audit/by-client/${clientB.id}`), 403);
    const team = (
      await api(sys, { token: root })('POST', '/api/v1/teams', { name: unique('reach'), description: '' })
    ).json().data;
    expectStatus(await call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: clientB.id }), 403);
    // Client B untouched.
    const b = await api(sys, { token: root })('GET', `/api/v1/clients/${clientB.id}`);
    expect(b.json().data.name).toBe(clientB.name);
  });

  it.each(probes.map((p) => [p.name, p] as const))('%s', async (_name, probe) => {
    const req = await probe.request(caller, role);
    const res = await api(sys, { token })(req.method, req.url, req.payload);
    expectStatus(res, probe.allowed.includes(role) ? probe.ok : 403);
  });
});

describe('super admin flag', () => {
  it('passes every check on every client', async () => {
    const call = api(sys, { token: root });
    expectStatus(await call('GET', `/api/v1/clients/${clientB.id}`), 200);
    expectStatus(await call('GET', `/api/v1/admin/access-audit/by-client/${clientB.id}`), 200);
    expectStatus(
      await call('POST', '/api/v1/roles', { name: unique('sa-role'), description: '', permissions: [] }),
      201,
    );
    const list = await call('GET', '/api/v1/clients?per_page=100&sort=created_at&order=desc');
    expectStatus(list, 200);
    expect(list.json().meta.total).toBeGreaterThanOrEqual(2);
  });
});
