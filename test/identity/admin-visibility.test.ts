import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { assignRole, createClient, createUser, type TestUser } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, type Caller } from './admin-support.ts';

/**
 * What an administrator of client A sees of client B in the global admin views (users, teams, service accounts, role
 * usage): nothing. A super admin sees everything.
 */

let sys: TestSystem;
let root: string;
let a: { id: string };
let b: { id: string };
let role: { id: string };
/** Directly on A, and a member of a team on A and B and of a team on B only. */
let userA: TestUser;
let userB: TestUser;
/** A member of the team on B only, and of the team linked to no client. */
let memberB: TestUser;
let memberAB: TestUser;
/** No grant on any client: a member of the team linked to no client only. */
let unplaced: TestUser;
let boss: TestUser;
let teamB: { id: string };
let teamAB: { id: string };
let teamNone: { id: string };
let keyB: { id: string };
let keyAB: { id: string };
let keyAll: { id: string };
let scopedKey: { id: string; api_key: string };
/** Admin of A: a signed-in user and an API key. */
let scoped: { who: string; caller: Caller }[];

const asRoot = (method: 'GET' | 'POST', url: string, body?: unknown) => api(sys, { token: root })(method, url, body);

async function created<T>(url: string, body: unknown): Promise<T> {
  const res = await asRoot('POST', url, body);
  expectStatus(res, 201);
  return res.json().data as T;
}

const newTeam = async (name: string, clients: string[], members: TestUser[]) => {
  const team = await created<{ id: string }>('/api/v1/teams', { name: `${name} ${sys.tag}`, description: '' });
  for (const client_id of clients) await created(`/api/v1/teams/${team.id}/clients`, { client_id });
  for (const m of members) await created(`/api/v1/teams/${team.id}/members`, { user_id: m.id, role_id: role.id });
  return team;
};

const newKey = (name: string, client_scope: string[], role_id = role.id) =>
  created<{ id: string; api_key: string }>('/api/v1/service-accounts', {
    name: `${name}-${sys.tag}`,
    description: '',
    role_id,
    client_scope,
  });

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem());
  a = await createClient(sys);
  b = await createClient(sys);
  role = await created('/api/v1/roles', { name: `Shared ${sys.tag}`, description: '', permissions: ['hosts:read'] });
  userA = await createUser(sys);
  userB = await createUser(sys);
  memberB = await createUser(sys);
  memberAB = await createUser(sys);
  unplaced = await createUser(sys);
  boss = await createUser(sys, { superAdmin: true });
  await assignRole(sys, userA.id, a.id, role.id);
  await assignRole(sys, userB.id, b.id, role.id);
  teamB = await newTeam('B only', [b.id], [memberB, userA]);
  teamAB = await newTeam('A and B', [a.id, b.id], [memberAB, userA]);
  teamNone = await newTeam('No client', [], [memberB, unplaced]);
  keyB = await newKey('on-b', [b.id]);
  keyAB = await newKey('on-a-and-b', [a.id, b.id]);
  keyAll = await newKey('everywhere', ['*']);
  scopedKey = await newKey('admin-of-a', [a.id], roleIdByName('Admin'));
  const admin = await userWith(sys, 'Admin', a.id);
  scoped = [
    { who: 'an Admin of A', caller: { token: admin.token } },
    { who: 'an Admin key scoped to A', caller: { apiKey: scopedKey.api_key } },
  ];
});
afterAll(() => sys?.stop());

/** Every page of a list, and the total its first page announced. */
async function listAll<T>(caller: Caller, url: string): Promise<{ items: T[]; total: number }> {
  const items: T[] = [];
  let total = -1;
  for (let page = 1; ; page++) {
    const res = await api(sys, caller)('GET', `${url}?per_page=100&page=${page}`);
    expectStatus(res, 200);
    const body = res.json() as { data: T[]; meta: { total: number } };
    if (total < 0) total = body.meta.total;
    items.push(...body.data);
    if (body.data.length < 100) return { items, total };
  }
}

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

describe('users', () => {
  it('a scoped admin lists users on its clients, accounts on no client and super admins; totals count those', async () => {
    for (const { who, caller } of scoped) {
      const { items, total } = await listAll<{ id: string }>(caller, '/api/v1/users');
      expect(total, who).toBe(items.length);
      expect(ids(items), who).toEqual(expect.arrayContaining([userA.id, memberAB.id, unplaced.id, boss.id]));
      expect(ids(items), who).not.toContain(userB.id);
      expect(ids(items), who).not.toContain(memberB.id);
    }
    const all = await listAll<{ id: string }>({ token: root }, '/api/v1/users');
    expect(all.total).toBe(all.items.length);
    expect(ids(all.items)).toEqual(expect.arrayContaining([userA.id, userB.id, memberB.id, memberAB.id, unplaced.id]));
  });

  it('a user of B only is not found; a user of A shows its teams and assignments on A only', async () => {
    for (const { who, caller } of scoped) {
      const call = api(sys, caller);
      for (const hidden of [userB, memberB]) {
        expectStatus(await call('GET', `/api/v1/users/${hidden.id}`), 404);
        expectStatus(await call('GET', `/api/v1/users/${hidden.id}/clients`), 404);
        expectStatus(await call('GET', `/api/v1/admin/access-audit/by-user/${hidden.id}`), 404);
      }
      const seen = await call('GET', `/api/v1/users/${userA.id}`);
      expectStatus(seen, 200);
      const detail = seen.json().data as { teams: { team_id: string }[]; clients: { client_id: string }[] };
      expect(
        detail.teams.map((t) => t.team_id),
        who,
      ).toEqual([teamAB.id]);
      expect(detail.clients.map((c) => c.client_id)).toEqual([a.id]);
      expectStatus(await call('GET', `/api/v1/users/${unplaced.id}`), 200);
      expectStatus(await call('GET', `/api/v1/users/${boss.id}`), 200);
    }
    const full = (await asRoot('GET', `/api/v1/users/${userA.id}`)).json().data as { teams: { team_id: string }[] };
    expect(full.teams.map((t) => t.team_id).sort()).toEqual([teamAB.id, teamB.id].sort());
    expectStatus(await asRoot('GET', `/api/v1/users/${userB.id}`), 200);
  });
});

interface TeamOut {
  id: string;
  members: { user_id: string }[];
  clients: { client_id: string }[];
}
const memberIds = (t: TeamOut | undefined) => (t?.members.map((m) => m.user_id) ?? []).sort();

describe('teams', () => {
  it('a scoped admin sees teams on its clients and teams on no client, with the members it may see', async () => {
    for (const { who, caller } of scoped) {
      const { items, total } = await listAll<TeamOut>(caller, '/api/v1/teams');
      expect(total, who).toBe(items.length);
      expect(ids(items), who).not.toContain(teamB.id);
      const ab = items.find((t) => t.id === teamAB.id);
      expect(ab?.clients.map((c) => c.client_id)).toEqual([a.id]);
      expect(memberIds(ab)).toEqual([memberAB.id, userA.id].sort());
      // Linked to no client: listed, without the member who is placed on B only.
      expect(memberIds(items.find((t) => t.id === teamNone.id))).toEqual([unplaced.id]);

      const call = api(sys, caller);
      expectStatus(await call('GET', `/api/v1/teams/${teamB.id}`), 404);
      const none = await call('GET', `/api/v1/teams/${teamNone.id}`);
      expectStatus(none, 200);
      expect(memberIds(none.json().data as TeamOut)).toEqual([unplaced.id]);
    }
    const all = await listAll<TeamOut>({ token: root }, '/api/v1/teams');
    expect(all.total).toBe(all.items.length);
    expect(memberIds(all.items.find((t) => t.id === teamB.id))).toEqual([memberB.id, userA.id].sort());
    expect(memberIds(all.items.find((t) => t.id === teamNone.id))).toEqual([memberB.id, unplaced.id].sort());
    expect(
      all.items
        .find((t) => t.id === teamAB.id)
        ?.clients.map((c) => c.client_id)
        .sort(),
    ).toEqual([a.id, b.id].sort());
  });
});

describe('service accounts', () => {
  it('a scoped admin sees keys scoped to its clients (and ["*"] keys), with only those clients in the scope', async () => {
    for (const { who, caller } of scoped) {
      const { items, total } = await listAll<{ id: string; client_scope: string[] }>(
        caller,
        '/api/v1/service-accounts',
      );
      expect(total, who).toBe(items.length);
      expect(ids(items), who).not.toContain(keyB.id);
      expect(items.find((s) => s.id === keyAB.id)?.client_scope).toEqual([a.id]);
      expect(items.find((s) => s.id === keyAll.id)?.client_scope).toEqual(['*']);
      expect(items.find((s) => s.id === scopedKey.id)?.client_scope).toEqual([a.id]);
      expect(items.flatMap((s) => s.client_scope)).not.toContain(b.id);

      const call = api(sys, caller);
      expectStatus(await call('GET', `/api/v1/service-accounts/${keyB.id}`), 404);
      const one = await call('GET', `/api/v1/service-accounts/${keyAB.id}`);
      expectStatus(one, 200);
      expect(one.json().data.client_scope).toEqual([a.id]);
    }
    const all = await listAll<{ id: string; client_scope: string[] }>({ token: root }, '/api/v1/service-accounts');
    expect(all.total).toBe(all.items.length);
    expect(all.items.find((s) => s.id === keyB.id)?.client_scope).toEqual([b.id]);
    expect(all.items.find((s) => s.id === keyAB.id)?.client_scope).toEqual([a.id, b.id]);
  });
});

describe('role usage', () => {
  interface Usage {
    users: { user_id: string; client_id: string }[];
    teams: { team_id: string; members: { user_id: string }[] }[];
    service_accounts: { id: string }[];
  }
  const usageOf = async (caller: Caller): Promise<Usage> => {
    const res = await api(sys, caller)('GET', `/api/v1/roles/${role.id}/usage`);
    expectStatus(res, 200);
    return res.json().data as Usage;
  };
  const teamsOf = (u: Usage) =>
    Object.fromEntries(u.teams.map((t) => [t.team_id, t.members.map((m) => m.user_id).sort()]));

  it('a scoped admin sees the holders on its clients only', async () => {
    for (const { who, caller } of scoped) {
      const usage = await usageOf(caller);
      expect(usage.users, who).toEqual([expect.objectContaining({ user_id: userA.id, client_id: a.id })]);
      expect(teamsOf(usage)).toEqual({
        [teamAB.id]: [memberAB.id, userA.id].sort(),
        [teamNone.id]: [unplaced.id],
      });
      expect(ids(usage.service_accounts).sort()).toEqual([keyAB.id, keyAll.id].sort());
    }
    const usage = await usageOf({ token: root });
    expect(usage.users.map((u) => u.user_id).sort()).toEqual([userA.id, userB.id].sort());
    expect(teamsOf(usage)).toEqual({
      [teamAB.id]: [memberAB.id, userA.id].sort(),
      [teamB.id]: [memberB.id, userA.id].sort(),
      [teamNone.id]: [memberB.id, unplaced.id].sort(),
    });
    expect(ids(usage.service_accounts).sort()).toEqual([keyAB.id, keyAll.id, keyB.id].sort());
  });
});
