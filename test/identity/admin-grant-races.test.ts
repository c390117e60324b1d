import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_PERMISSIONS, roleIdByName } from '../../actors/identity/permissions.ts';
import { createClient, createUser, tokenFor } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, type Method } from './admin-support.ts';

/**
 * A role edit raced against a grant of that role: one after the other each is refused when together they would hand
 * out more than the caller holds, and fired at the same moment they must be too, in either order of arrival.
 */

let sys: TestSystem;
let root: string;
/** A role holding only clients:read, for assignments that exist before a round. */
let baseRoleId: string;
let managerRoleId: string;

const ROUNDS = 15;
// What the caller holds on its client (through a team, so its direct assignment there is free to be raced).
const MANAGER = ['clients:read', 'users:read', 'users:write', 'roles:read', 'roles:write', 'teams:read', 'teams:write'];

const asRoot = (method: Method, url: string, body?: unknown) => api(sys, { token: root })(method, url, body);

async function created<T>(res: Promise<LightMyRequestResponse>): Promise<T> {
  const r = await res;
  expectStatus(r, 201);
  return r.json().data as T;
}

const newRole = (name: string, permissions: string[]) =>
  created<{ id: string }>(
    asRoot('POST', '/api/v1/roles', { name: `${name} ${sys.tag}`, description: '', permissions }),
  );
const newTeam = (name: string) =>
  created<{ id: string }>(asRoot('POST', '/api/v1/teams', { name: `${name} ${sys.tag}`, description: '' }));

/** Sends both requests at the same moment, `a` or `b` first; the answers come back as [a's, b's]. */
async function together(
  a: () => Promise<LightMyRequestResponse>,
  b: () => Promise<LightMyRequestResponse>,
  aFirst: boolean,
): Promise<[LightMyRequestResponse, LightMyRequestResponse]> {
  if (aFirst) return Promise.all([a(), b()]);
  const [rb, ra] = await Promise.all([b(), a()]);
  return [ra, rb];
}

/** One caller of its own per test (a failed round leaves nothing behind for the next test). */
interface Caller {
  clientId: string;
  userId: string;
  call: (method: Method, url: string, body?: unknown) => Promise<LightMyRequestResponse>;
  /** Its permissions on the client now, as the access resolver gives them. */
  holds: () => Promise<string[]>;
  /** Its permissions before any round: no round may add to them. */
  before: string[];
}

async function newCaller(name: string): Promise<Caller> {
  const clientId = (await createClient(sys)).id;
  const user = await createUser(sys);
  const home = await newTeam(`Home of ${name}`);
  await created(asRoot('POST', `/api/v1/teams/${home.id}/clients`, { client_id: clientId }));
  await created(asRoot('POST', `/api/v1/teams/${home.id}/members`, { user_id: user.id, role_id: managerRoleId }));
  const call = api(sys, { token: await tokenFor(sys, user) });
  const holds = async (): Promise<string[]> => {
    const me = await call('GET', '/api/v1/auth/me');
    expectStatus(me, 200);
    return [...((me.json().data.client_access as Record<string, string[]>)[clientId] ?? [])].sort();
  };
  const before = await holds();
  expect(before).toEqual([...MANAGER].sort());
  return { clientId, userId: user.id, call, holds, before };
}

/** A service account's permissions on the client, from the access audit (the resolver's union). */
async function keyHolds(clientId: string, saId: string): Promise<string[]> {
  const res = await asRoot('GET', `/api/v1/admin/access-audit/by-client/${clientId}`);
  expectStatus(res, 200);
  const sa = (res.json().data.service_accounts as { id: string; permissions: string[] }[]).find((s) => s.id === saId);
  return sa?.permissions ?? [];
}

interface Round {
  /** The grant of the role, sent by the caller. */
  grant: () => Promise<LightMyRequestResponse>;
  /** What the grantee holds on the client after the round; by default the caller itself. */
  holds?: (grant: LightMyRequestResponse) => Promise<string[]>;
  /** Undoes the grant before the next round. */
  cleanup?: () => Promise<void>;
}

/** Per grant path: set-up once for the caller, then per round (the role exists, still with clients:read only). */
type GrantPath = (c: Caller) => Promise<(roleId: string, round: number) => Promise<Round>>;

const paths: Record<string, GrantPath> = {
  'direct assignment (POST /users/:id/clients)': async (c) => async (roleId) => ({
    grant: () => c.call('POST', `/api/v1/users/${c.userId}/clients`, { client_id: c.clientId, role_id: roleId }),
    cleanup: async () => void (await asRoot('DELETE', `/api/v1/users/${c.userId}/clients/${c.clientId}`)),
  }),
  'assignment change (PUT /users/:id/clients/:clientId)': async (c) => async (roleId) => {
    await created(asRoot('POST', `/api/v1/users/${c.userId}/clients`, { client_id: c.clientId, role_id: baseRoleId }));
    return {
      grant: () => c.call('PUT', `/api/v1/users/${c.userId}/clients/${c.clientId}`, { role_id: roleId }),
      cleanup: async () => expectStatus(await asRoot('DELETE', `/api/v1/users/${c.userId}/clients/${c.clientId}`), 204),
    };
  },
  'team membership (POST /teams/:id/members)': async (c) => {
    const team = await newTeam('Raced members');
    await created(asRoot('POST', `/api/v1/teams/${team.id}/clients`, { client_id: c.clientId }));
    return async (roleId) => ({
      grant: () => c.call('POST', `/api/v1/teams/${team.id}/members`, { user_id: c.userId, role_id: roleId }),
      cleanup: async () => void (await asRoot('DELETE', `/api/v1/teams/${team.id}/members/${c.userId}`)),
    });
  },
  'membership change (PUT /teams/:id/members/:userId)': async (c) => {
    const team = await newTeam('Raced member roles');
    await created(asRoot('POST', `/api/v1/teams/${team.id}/clients`, { client_id: c.clientId }));
    return async (roleId) => {
      await created(asRoot('POST', `/api/v1/teams/${team.id}/members`, { user_id: c.userId, role_id: baseRoleId }));
      return {
        grant: () => c.call('PUT', `/api/v1/teams/${team.id}/members/${c.userId}`, { role_id: roleId }),
        cleanup: async () => expectStatus(await asRoot('DELETE', `/api/v1/teams/${team.id}/members/${c.userId}`), 204),
      };
    };
  },
  // The role is held on a team with no client yet: editing it alone is allowed, linking the client grants it.
  'team client link (POST /teams/:id/clients)': async (c) => {
    const team = await newTeam('Raced links');
    return async (roleId) => {
      await created(asRoot('POST', `/api/v1/teams/${team.id}/members`, { user_id: c.userId, role_id: roleId }));
      return {
        grant: () => c.call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: c.clientId }),
        cleanup: async () => {
          await asRoot('DELETE', `/api/v1/teams/${team.id}/clients/${c.clientId}`);
          expectStatus(await asRoot('DELETE', `/api/v1/teams/${team.id}/members/${c.userId}`), 204);
        },
      };
    };
  },
  'new service account (POST /service-accounts)': async (c) => async (roleId, round) => ({
    grant: () =>
      c.call('POST', '/api/v1/service-accounts', {
        name: `raced-${sys.tag}-${round}`,
        description: '',
        role_id: roleId,
        client_scope: [c.clientId],
      }),
    holds: async (grant) => (grant.statusCode === 201 ? keyHolds(c.clientId, grant.json().data.id as string) : []),
  }),
  'service account change (PUT /service-accounts/:id)': async (c) => {
    const key = await created<{ id: string }>(
      asRoot('POST', '/api/v1/service-accounts', {
        name: `raced-key-${sys.tag}`,
        description: '',
        role_id: baseRoleId,
        client_scope: [c.clientId],
      }),
    );
    return async (roleId) => ({
      grant: () => c.call('PUT', `/api/v1/service-accounts/${key.id}`, { role_id: roleId }),
      holds: () => keyHolds(c.clientId, key.id),
    });
  },
};

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  managerRoleId = (await newRole('Manager', MANAGER)).id;
  baseRoleId = (await newRole('Base', ['clients:read'])).id;
});
afterAll(() => sys?.stop());

describe('a role edit raced against a grant of the role', () => {
  it.each(Object.entries(paths))('never hands out more than the caller holds: %s', async (name, path) => {
    const c = await newCaller(name);
    const prepare = await path(c);
    for (let round = 0; round < ROUNDS; round++) {
      const role = await created<{ id: string }>(
        c.call('POST', '/api/v1/roles', {
          name: `Raced ${sys.tag} ${name} ${round}`,
          description: '',
          permissions: ['clients:read'],
        }),
      );
      const r = await prepare(role.id, round);
      const widen = () => c.call('PUT', `/api/v1/roles/${role.id}`, { permissions: [...ALL_PERMISSIONS] });
      // Either request may be the first to arrive.
      const [w, g] = await together(widen, r.grant, round % 2 === 0);
      expect([200, 403], `role edit: ${w.body}`).toContain(w.statusCode);
      expect([200, 201, 403], `grant: ${g.body}`).toContain(g.statusCode);
      expect(
        w.statusCode === 403 || g.statusCode === 403,
        `round ${round}: both the role edit and the grant passed`,
      ).toBe(true);
      const held = r.holds ? await r.holds(g) : await c.holds();
      expect(
        held.filter((p) => !c.before.includes(p)),
        `round ${round}`,
      ).toEqual([]);
      await r.cleanup?.();
    }
  });
});

describe('a team member added while the team is linked to a client', () => {
  it('both lock the team: a member the caller could not grant on the client never ends up there', async () => {
    const c = await newCaller('linker');
    const everything = roleIdByName('Super Admin');
    for (let round = 0; round < ROUNDS; round++) {
      const team = await created<{ id: string }>(
        c.call('POST', '/api/v1/teams', { name: `Link race ${sys.tag} ${round}`, description: '' }),
      );
      const member = () =>
        c.call('POST', `/api/v1/teams/${team.id}/members`, { user_id: c.userId, role_id: everything });
      const link = () => c.call('POST', `/api/v1/teams/${team.id}/clients`, { client_id: c.clientId });
      const [m, l] = await together(member, link, round % 2 === 0);
      expect([201, 403], `member: ${m.body}`).toContain(m.statusCode);
      expect([201, 403], `link: ${l.body}`).toContain(l.statusCode);
      expect(m.statusCode === 403 || l.statusCode === 403, `round ${round}: both passed`).toBe(true);
      expect((await c.holds()).filter((p) => !c.before.includes(p))).toEqual([]);
    }
  });
});
