import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { BACKFILL_AUDIT_CLIENTS } from '../../migrations/postgres/Migration0016_audit_log_clients.ts';
import { assignRole, createClient, createUser, login } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit, type AuditRow } from './admin-support.ts';

let sys: TestSystem;
let root: string;
let rootId: string;

beforeAll(async () => ({ sys, root, rootId } = await startAdminSystem()));
afterAll(() => sys?.stop());

const log = async (query: Record<string, string>, token = root) => {
  const res = await sys.http({
    method: 'GET',
    url: `/api/v1/audit-log?${new URLSearchParams(query).toString()}`,
    token,
    headers: { 'user-agent': 'audit-test' },
  });
  return res;
};

describe('audit log', () => {
  it('records administrative actions with actor, resource, details, IP and time, and filters them', async () => {
    const started = new Date(sys.clock.now() - 1000).toISOString();
    // A fresh actor so actor_id isolates this test's entries.
    const actor = await userWith(sys, 'Admin', (await createClient(sys)).id);
    const call = (method: 'POST' | 'PUT', url: string, payload: Record<string, unknown>) =>
      sys.http({
        method,
        url,
        payload,
        token: actor.token,
        headers: { 'user-agent': 'audit-test-agent' },
        remoteAddress: '203.0.113.7',
      });
    // The test clock stands still unless moved: a second between actions gives each entry its own time.
    const t1 = (await call('POST', '/api/v1/teams', { name: `Audit A ${sys.tag}`, description: '' })).json().data;
    sys.clock.advance(1000);
    const t2 = (await call('POST', '/api/v1/teams', { name: `Audit B ${sys.tag}`, description: '' })).json().data;
    sys.clock.advance(1000);
    expectStatus(await call('PUT', `/api/v1/teams/${t1.id}`, { description: 'changed' }), 200);

    const entry = await waitForAudit(sys, root, { action: 'team.updated', resource_id: t1.id });
    expect(entry).toMatchObject({
      actor_id: actor.user.id,
      actor_email: actor.user.email,
      actor_type: 'user',
      action: 'team.updated',
      resource_type: 'team',
      resource_id: t1.id,
      details: { changes: { description: { from: '', to: 'changed' } } },
      ip_address: '203.0.113.7',
      user_agent: 'audit-test-agent',
    });
    expect(Object.keys(entry).sort()).toEqual(
      [
        'action',
        'actor_email',
        'actor_id',
        'actor_type',
        'client_ids',
        'created_at',
        'details',
        'id',
        'ip_address',
        'request_id',
        'resource_id',
        'resource_type',
        'user_agent',
      ].sort(),
    );
    expect(entry.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    await waitForAudit(sys, root, { action: 'team.created', resource_id: t2.id });

    // actor_id: exactly this actor's three entries, newest first.
    const mine = await log({ actor_id: actor.user.id });
    expectStatus(mine, 200);
    const rows = mine.json().data as AuditRow[];
    expect(mine.json().meta).toEqual({ total: 3, page: 1, per_page: 20 });
    expect(rows.map((r) => r.action)).toEqual(['team.updated', 'team.created', 'team.created']);
    const times = rows.map((r) => Date.parse(r.created_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // action, resource_type, resource_id combine with actor_id.
    expect((await log({ actor_id: actor.user.id, action: 'team.created' })).json().meta.total).toBe(2);
    expect(
      (await log({ actor_id: actor.user.id, resource_type: 'team', resource_id: t2.id }))
        .json()
        .data.map((r: AuditRow) => r.resource_id),
    ).toEqual([t2.id]);
    expect((await log({ actor_id: actor.user.id, resource_type: 'user' })).json().meta.total).toBe(0);

    // Pagination.
    const p1 = (await log({ actor_id: actor.user.id, per_page: '2', page: '1' })).json();
    const p2 = (await log({ actor_id: actor.user.id, per_page: '2', page: '2' })).json();
    expect(p1.meta).toEqual({ total: 3, page: 1, per_page: 2 });
    expect(p2.meta).toEqual({ total: 3, page: 2, per_page: 2 });
    expect(p1.data).toHaveLength(2);
    expect(p2.data).toHaveLength(1);
    expect(new Set([...p1.data, ...p2.data].map((r: AuditRow) => r.id)).size).toBe(3);

    // from / to (inclusive, any RFC 3339 offset).
    const newest = rows[0]!;
    expect((await log({ actor_id: actor.user.id, from: started })).json().meta.total).toBe(3);
    expect(
      (await log({ actor_id: actor.user.id, from: newest.created_at, to: newest.created_at }))
        .json()
        .data.map((r: AuditRow) => r.id),
    ).toContain(newest.id);
    const later = new Date(Date.parse(newest.created_at) + 60_000).toISOString().replace('Z', '+00:00');
    expect((await log({ actor_id: actor.user.id, from: later })).json().meta.total).toBe(0);
    expect((await log({ actor_id: actor.user.id, to: started })).json().meta.total).toBe(0);
  });

  it('rejects malformed filters with 400', async () => {
    expectStatus(await log({ actor_id: 'nope' }), 400);
    expectStatus(await log({ from: 'yesterday' }), 400);
    expectStatus(await log({ from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }), 400);
    expectStatus(await log({ per_page: '500' }), 400);
    const ok = await log({ from: '2026-01-01T00:00:00+02:00' });
    expectStatus(ok, 200);
  });

  it('needs audit:read: Team Lead yes, Engineer no', async () => {
    const client = await createClient(sys);
    const lead = await userWith(sys, 'Team Lead', client.id);
    const engineer = await userWith(sys, 'Engineer', client.id);
    expectStatus(await log({}, lead.token), 200);
    expectStatus(await log({}, engineer.token), 403);
    expectStatus(await sys.http({ method: 'GET', url: '/api/v1/audit-log' }), 401);
  });

  it('records service-account and client actions under their names', async () => {
    const sa = await api(sys, { token: root })('POST', '/api/v1/service-accounts', {
      name: `audit-sa-${sys.tag}`,
      description: '',
      role_id: roleIdByName('Viewer'),
      client_scope: ['*'],
    });
    expectStatus(sa, 201);
    const client = await api(sys, { token: root })('POST', '/api/v1/clients', {
      name: 'Audited',
      slug: `audited-${sys.tag}`,
    });
    expectStatus(client, 201);
    const s = await waitForAudit(sys, root, { action: 'service_account.created', resource_id: sa.json().data.id });
    expect(s).toMatchObject({ actor_id: rootId, resource_type: 'service_account' });
    expect(JSON.stringify(s.details)).not.toContain(sa.json().data.api_key);
    const c = await waitForAudit(sys, root, { action: 'client.created', resource_id: client.json().data.id });
    expect(c).toMatchObject({ resource_type: 'client', details: { name: 'Audited', slug: `audited-${sys.tag}` } });
  });
});

describe('audit log scoped to the caller’s clients', () => {
  // Two tenants, A and B, with entries about each, about both and about none, all written by the super admin.
  let A: string;
  let B: string;
  let envA: string;
  let envB: string;
  let teamId: string;
  let userB: string;
  let keyAll: string;
  let keyAbId: string;
  let started: string;
  let ended: string;
  /** The entries about A alone: all a caller holding audit:read on A only may see. */
  let aEntries: { action: string; resource_id: string }[];
  const callers: { name: string; who: { token?: string; apiKey?: string } }[] = [];
  let leadAB: string;

  const root$ = () => api(sys, { token: root });
  const created = async (res: Promise<{ statusCode: number; body: string; json: () => unknown }>) => {
    const r = await res;
    if (r.statusCode !== 201 && r.statusCode !== 200) expect.fail(`expected 201, got ${r.statusCode}: ${r.body}`);
    return (r.json() as { data: { id: string; api_key?: string } }).data;
  };
  const list = async (who: { token?: string; apiKey?: string }, query: Record<string, string> = {}) => {
    const res = await api(sys, who)('GET', `/api/v1/audit-log?${new URLSearchParams({ per_page: '100', ...query })}`);
    expectStatus(res, 200);
    return res.json() as { data: AuditRow[]; meta: { total: number; page: number; per_page: number } };
  };
  const key = (e: { action: string; resource_id: string | null }) => `${e.action} ${e.resource_id}`;
  const newKey = async (name: string, scope: string[]) =>
    created(
      root$()('POST', '/api/v1/service-accounts', {
        name: `${name}-${sys.tag}`,
        description: '',
        role_id: roleIdByName('Team Lead'),
        client_scope: scope,
      }),
    );

  beforeAll(async () => {
    started = new Date(sys.clock.now() - 1000).toISOString();
    A = (await created(root$()('POST', '/api/v1/clients', { name: 'Tenant A', slug: `tenant-a-${sys.tag}` }))).id;
    B = (await created(root$()('POST', '/api/v1/clients', { name: 'Tenant B', slug: `tenant-b-${sys.tag}` }))).id;
    envA = (await created(root$()('POST', `/api/v1/clients/${A}/environments`, { name: 'Prod', slug: 'prod' }))).id;
    envB = (await created(root$()('POST', `/api/v1/clients/${B}/environments`, { name: 'Prod', slug: 'prod' }))).id;
    const tokenA = (await created(root$()('POST', `/api/v1/environments/${envA}/install-tokens`, {}))).id;
    const tokenB = (await created(root$()('POST', `/api/v1/environments/${envB}/install-tokens`, {}))).id;
    teamId = (await created(root$()('POST', '/api/v1/teams', { name: `Both ${sys.tag}`, description: '' }))).id;
    await created(root$()('POST', `/api/v1/teams/${teamId}/clients`, { client_id: A }));
    await created(root$()('POST', `/api/v1/teams/${teamId}/clients`, { client_id: B }));
    expectStatus(await root$()('PUT', `/api/v1/teams/${teamId}`, { description: 'reaches A and B' }), 200);
    const b = await createUser(sys);
    userB = b.id;
    await created(root$()('POST', `/api/v1/users/${userB}/clients`, { client_id: B, role_id: roleIdByName('Viewer') }));
    await login(sys, b, { remoteAddress: '198.51.100.23', userAgent: 'tenant-b-browser' });
    const role = await created(
      root$()('POST', '/api/v1/roles', { name: `Scoped ${sys.tag}`, description: '', permissions: ['clients:read'] }),
    );
    const keyA = await newKey('key-a', [A]);
    const keyB = await newKey('key-b', [B]);
    const keyAB = await newKey('key-ab', [A, B]);
    keyAbId = keyAB.id;
    keyAll = (await newKey('key-all', ['*'])).api_key!;
    ended = new Date(sys.clock.now() + 1000).toISOString();

    aEntries = [
      { action: 'client.created', resource_id: A },
      { action: 'environment.created', resource_id: envA },
      { action: 'install_token.created', resource_id: tokenA },
      { action: 'team.client.added', resource_id: teamId },
      { action: 'service_account.created', resource_id: keyA.id },
    ];
    // Stored asynchronously: wait until the super admin sees every one of them.
    for (const e of [
      ...aEntries,
      { action: 'client.created', resource_id: B },
      { action: 'environment.created', resource_id: envB },
      { action: 'install_token.created', resource_id: tokenB },
      { action: 'team.updated', resource_id: teamId },
      { action: 'user.client.assigned', resource_id: userB },
      { action: 'user.login', resource_id: userB },
      { action: 'role.created', resource_id: role.id },
      { action: 'service_account.created', resource_id: keyB.id },
      { action: 'service_account.created', resource_id: keyAB.id },
    ])
      await waitForAudit(sys, root, e);
    await waitForAudit(sys, root, { action: 'team.client.added', resource_id: teamId }, (e) => e.client_ids[0] === B);

    callers.push(
      { name: 'a Team Lead user of A', who: { token: (await userWith(sys, 'Team Lead', A)).token } },
      { name: 'an API key scoped to A', who: { apiKey: keyA.api_key! } },
    );
    const ab = await userWith(sys, 'Team Lead', A);
    await assignRole(sys, ab.user.id, B, roleIdByName('Team Lead'));
    leadAB = ab.token;
  });

  it('records the clients each entry concerns', async () => {
    const of = async (action: string, resourceId: string) =>
      (await list({ token: root }, { action, resource_id: resourceId })).data.map((e) => [...e.client_ids].sort());
    expect(await of('client.created', A)).toEqual([[A]]);
    expect(await of('environment.created', envB)).toEqual([[B]]);
    expect((await of('team.client.added', teamId)).sort()).toEqual([[A], [B]].sort());
    expect(await of('team.updated', teamId)).toEqual([[A, B].sort()]);
    expect(await of('team.created', teamId)).toEqual([[]]);
    expect(await of('user.client.assigned', userB)).toEqual([[B]]);
    expect(await of('user.login', userB)).toEqual([[]]);
    expect(await of('service_account.created', keyAbId)).toEqual([[A, B].sort()]);
  });

  it('shows a caller of client A only the entries about A, with and without filters', async () => {
    const expected = aEntries.map(key).sort();
    for (const { name, who } of callers) {
      const everything = await list(who);
      expect(everything.data.map(key).sort(), name).toEqual(expected);
      expect(everything.meta.total, name).toBe(expected.length);
      for (const e of everything.data) expect(e.client_ids, name).toEqual([A]);

      // Paging totals count only what the caller sees.
      const p1 = await list(who, { per_page: '2', page: '1' });
      const p3 = await list(who, { per_page: '2', page: '3' });
      expect(p1.meta.total, name).toBe(expected.length);
      expect(p3.data.map(key), name).toHaveLength(1);

      const total = async (query: Record<string, string>) => (await list(who, query)).meta.total;
      expect(await total({ actor_id: rootId }), name).toBe(expected.length);
      expect(
        (await list(who, { action: 'environment.created' })).data.map((e) => e.resource_id),
        name,
      ).toEqual([envA]);
      expect(
        (await list(who, { resource_type: 'client' })).data.map((e) => e.resource_id),
        name,
      ).toEqual([A]);
      expect(await total({ resource_id: A }), name).toBe(1);
      // Another tenant's ids find nothing, though the super admin sees their entries.
      expect(await total({ resource_id: B }), name).toBe(0);
      expect(await total({ resource_id: envB }), name).toBe(0);
      expect(await total({ resource_id: userB }), name).toBe(0);
      expect(await total({ resource_id: keyAbId }), name).toBe(0);
      expect(
        (await list(who, { resource_id: teamId })).data.map((e) => e.action),
        name,
      ).toEqual(['team.client.added']);
      expect(await total({ from: started, to: ended }), name).toBe(expected.length);
      expect(await total({ from: started, to: ended, action: 'client.created' }), name).toBe(1);
      expect(await total({ from: ended }), name).toBe(0);
      // Entries about no client (logins, roles, new teams, all-client keys) are not theirs.
      expect(await total({ action: 'user.login' }), name).toBe(0);
      expect(await total({ resource_type: 'role' }), name).toBe(0);
      expect(await total({ action: 'team.created' }), name).toBe(0);
    }
  });

  it('shows an entry about several clients to holders of audit:read on every one of them', async () => {
    const both = await list({ token: leadAB });
    const keys = both.data.map(key);
    expect(keys).toContain(`team.updated ${teamId}`);
    expect(keys).toContain(`service_account.created ${keyAbId}`);
    expect(keys).toContain(`user.client.assigned ${userB}`);
    expect(both.meta.total).toBe(13);
    for (const e of both.data) {
      expect(e.client_ids.length).toBeGreaterThan(0);
      for (const c of e.client_ids) expect([A, B]).toContain(c);
    }
    expect((await list({ token: leadAB }, { action: 'user.login' })).meta.total).toBe(0);
  });

  it('shows everything to super admins and to holders of audit:read on all clients', async () => {
    for (const who of [{ token: root }, { apiKey: keyAll }]) {
      expect((await list(who, { resource_id: B })).data.map((e) => e.action)).toEqual(['client.created']);
      expect((await list(who, { resource_id: teamId })).meta.total).toBe(4);
      const logins = (await list(who, { action: 'user.login', resource_id: userB })).data;
      expect(logins).toHaveLength(1);
      expect(logins[0]).toMatchObject({ ip_address: '198.51.100.23', user_agent: 'tenant-b-browser', client_ids: [] });
    }
  });

  it('backfills the clients of entries written before they were recorded', async () => {
    const [x, y] = [randomUUID(), randomUUID()];
    const rows: [string, string, string | null, Record<string, unknown>, string[]][] = [
      ['client.updated', 'client', x, { changes: {} }, [x]],
      ['environment.deleted', 'environment', randomUUID(), { client_id: x, name: 'n' }, [x]],
      ['annotation_deleted', 'annotation', randomUUID(), { note: { client_id: y, text: 't' } }, [y]],
      [
        'servicedesk.mapping_updated',
        'servicedesk_mapping',
        randomUUID(),
        { before: { client_id: x }, after: { client_id: x } },
        [x],
      ],
      ['team.deleted', 'team', randomUUID(), { client_ids: [x, y], member_ids: [] }, [x, y]],
      ['service_account.created', 'service_account', randomUUID(), { client_scope: [y] }, [y]],
      ['service_account.created', 'service_account', randomUUID(), { client_scope: ['*'] }, []],
      [
        'service_account.updated',
        'service_account',
        randomUUID(),
        { changes: { client_scope: { from: [x], to: [y] } } },
        [x, y],
      ],
      [
        'service_account.updated',
        'service_account',
        randomUUID(),
        { changes: { client_scope: { from: [x], to: ['*'] } } },
        [],
      ],
      ['service_account.updated', 'service_account', randomUUID(), { changes: { name: { from: 'a', to: 'b' } } }, []],
      ['team.updated', 'team', randomUUID(), { changes: { name: { from: 'a', to: 'b' } } }, []],
      ['user.login', 'user', randomUUID(), { method: 'password' }, []],
      ['host.deleted', 'host', randomUUID(), { client_id: 'not-a-uuid' }, []],
    ];
    const ids = rows.map(() => randomUUID());
    for (const [i, [action, type, resource, details]] of rows.entries())
      await sys.sql(
        `INSERT INTO audit_log (id, actor_type, action, resource_type, resource_id, details, created_at) VALUES (?, 'user', ?, ?, ?, ?::jsonb, now())`,
        [ids[i], action, type, resource, JSON.stringify(details)],
      );
    await sys.sql(BACKFILL_AUDIT_CLIENTS);
    await sys.sql(BACKFILL_AUDIT_CLIENTS); // a second run changes nothing
    const stored = await sys.sql<{ id: string; client_ids: string[] }>(
      `SELECT id, client_ids FROM audit_log WHERE id IN (?)`,
      [ids],
    );
    const byId = new Map(stored.map((r) => [r.id, [...r.client_ids].sort()]));
    for (const [i, row] of rows.entries()) expect(byId.get(ids[i]!), row[0]).toEqual([...row[4]].sort());
  });
});
