import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { roleIdByName } from '../../actors/identity/permissions.ts';
import { createClient } from '../support/identity.ts';
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
