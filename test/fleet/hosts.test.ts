import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from '../identity/admin-support.ts';
import { insertAgent, insertEnrolledHost, insertEnvironment, insertHost } from './admin-fixtures.ts';

let sys: TestSystem;
let root: string;

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(() => sys?.stop());

interface HostOut {
  id: string;
  hostname: string;
  ip_address: string;
  agent_status: string;
  last_seen_at: string | null;
  tags: Record<string, string>;
  [k: string]: unknown;
}

const HOST_KEYS = [
  'agent_id',
  'agent_status',
  'agent_version',
  'arch',
  'client_id',
  'cpu_cores',
  'created_at',
  'environment_id',
  'hostname',
  'id',
  'ip_address',
  'kernel_version',
  'labels',
  'last_seen_at',
  'memory_total_bytes',
  'os',
  'os_version',
  'tags',
  'updated_at',
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const ago = (minutes: number): string => new Date(Date.now() - minutes * 60_000).toISOString();

describe('hosts', () => {
  it('reads one host in the documented shape', async () => {
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const agentId = randomUUID();
    const seen = ago(1);
    const h = await insertHost(sys, env, {
      hostname: 'db-1',
      agent_id: agentId,
      agent_status: 'online',
      last_seen_at: seen,
      memory_total_bytes: 64 * 1024 ** 3,
      cpu_cores: 16,
      tags: { team: 'data' },
      labels: { 'k8s/node': 'true' },
    });
    const never = await insertHost(sys, env, { hostname: 'db-2' });
    const call = api(sys, { token: root });
    const res = await call('GET', `/api/v1/hosts/${h.id}`);
    expectStatus(res, 200);
    const host = res.json().data as HostOut;
    expect(Object.keys(host).sort()).toEqual(HOST_KEYS);
    expect(host).toMatchObject({
      id: h.id,
      environment_id: env.id,
      client_id: client.id,
      agent_id: agentId,
      hostname: 'db-1',
      ip_address: '10.0.0.1',
      os: 'linux',
      os_version: '24.04',
      kernel_version: '6.8.0',
      arch: 'amd64',
      cpu_cores: 16,
      memory_total_bytes: 64 * 1024 ** 3,
      agent_status: 'online',
      agent_version: '1.2.3',
      tags: { team: 'data' },
      labels: { 'k8s/node': 'true' },
    });
    expect(typeof host.memory_total_bytes).toBe('number');
    expect(host.last_seen_at).toMatch(ISO);
    expect(Date.parse(host.last_seen_at!)).toBe(Date.parse(seen));
    expect(host.created_at).toMatch(ISO);
    const other = (await call('GET', `/api/v1/hosts/${never.id}`)).json().data as HostOut;
    expect(other.last_seen_at).toBeNull();
    expect(other.agent_id).toBeNull();
    // List rows are the same shape.
    const list = await call('GET', `/api/v1/environments/${env.id}/hosts`);
    expect(list.json().data[0]).toEqual(host);
    expectStatus(await call('GET', `/api/v1/hosts/${randomUUID()}`), 404);
    expectStatus(await call('GET', '/api/v1/hosts/xyz'), 400);
  });

  it('lists an environment’s hosts: status filter, every sort column both ways, pagination', async () => {
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const otherEnv = await insertEnvironment(sys, client.id);
    const spec = [
      { hostname: 'web-b', ip_address: '10.0.0.3', agent_status: 'online', last_seen_at: ago(1), created_at: ago(50) },
      {
        hostname: 'web-a',
        ip_address: '10.0.0.9',
        agent_status: 'offline',
        last_seen_at: ago(30),
        created_at: ago(40),
      },
      { hostname: 'db-c', ip_address: '10.0.0.1', agent_status: 'online', last_seen_at: ago(5), created_at: ago(30) },
      { hostname: 'cache-d', ip_address: '10.0.0.2', agent_status: 'offline', last_seen_at: null, created_at: ago(20) },
    ] as const;
    for (const s of spec) await insertHost(sys, env, s);
    await insertHost(sys, otherEnv, { hostname: 'aaa-elsewhere' });
    const call = api(sys, { token: root });
    const names = async (q: string): Promise<string[]> => {
      const res = await call('GET', `/api/v1/environments/${env.id}/hosts${q}`);
      expectStatus(res, 200);
      return (res.json().data as HostOut[]).map((h) => h.hostname);
    };

    const all = await call('GET', `/api/v1/environments/${env.id}/hosts`);
    expect(all.json().meta).toEqual({ total: 4, page: 1, per_page: 20 });
    expect(await names('')).toEqual(['cache-d', 'db-c', 'web-a', 'web-b']);
    expect(await names('?order=desc')).toEqual(['web-b', 'web-a', 'db-c', 'cache-d']);
    expect(await names('?sort=ip_address')).toEqual(['db-c', 'cache-d', 'web-b', 'web-a']);
    expect(await names('?sort=ip_address&order=desc')).toEqual(['web-a', 'web-b', 'cache-d', 'db-c']);
    expect(await names('?sort=created_at')).toEqual(['web-b', 'web-a', 'db-c', 'cache-d']);
    expect(await names('?sort=created_at&order=desc')).toEqual(['cache-d', 'db-c', 'web-a', 'web-b']);
    // Never-seen hosts come last either way.
    expect(await names('?sort=last_seen_at')).toEqual(['web-a', 'db-c', 'web-b', 'cache-d']);
    expect(await names('?sort=last_seen_at&order=desc')).toEqual(['web-b', 'db-c', 'web-a', 'cache-d']);
    // By status, then hostname.
    expect(await names('?sort=agent_status')).toEqual(['cache-d', 'web-a', 'db-c', 'web-b']);
    expect(await names('?sort=agent_status&order=desc')).toEqual(['db-c', 'web-b', 'cache-d', 'web-a']);

    const online = await call('GET', `/api/v1/environments/${env.id}/hosts?status=online`);
    expect(online.json().meta.total).toBe(2);
    expect((online.json().data as HostOut[]).map((h) => h.hostname)).toEqual(['db-c', 'web-b']);
    expect(await names('?status=offline&sort=hostname&order=desc')).toEqual(['web-a', 'cache-d']);

    const p2 = await call('GET', `/api/v1/environments/${env.id}/hosts?per_page=3&page=2`);
    expect(p2.json().meta).toEqual({ total: 4, page: 2, per_page: 3 });
    expect((p2.json().data as HostOut[]).map((h) => h.hostname)).toEqual(['web-b']);

    for (const q of ['status=up', 'sort=os', 'order=up', 'per_page=101', 'page=0'])
      expectStatus(await call('GET', `/api/v1/environments/${env.id}/hosts?${q}`), 400);
    expectStatus(await call('GET', `/api/v1/environments/${randomUUID()}/hosts`), 404);
  });

  it('replaces user tags, validating keys, values and the count; audited', async () => {
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const h = await insertHost(sys, env, { tags: { team: 'web', old: 'x' } });
    const engineer = api(sys, { token: (await userWith(sys, 'Engineer', client.id)).token });
    const url = `/api/v1/hosts/${h.id}/tags`;

    const tags = { team: 'platform', 'env/tier': 'gold', 'a.b_c-d': '', ['k'.repeat(128)]: 'v'.repeat(1024) };
    const res = await engineer('PUT', url, { tags });
    expectStatus(res, 200);
    expect(res.json().data.tags).toEqual(tags);
    expect(res.json().data.id).toBe(h.id);
    expect((await engineer('GET', `/api/v1/hosts/${h.id}`)).json().data.tags).toEqual(tags);
    const audit = await waitForAudit(sys, root, { action: 'host.tags.updated', resource_id: h.id });
    expect(audit.details).toMatchObject({
      changes: {
        team: { from: 'web', to: 'platform' },
        old: { from: 'x', to: null },
        'env/tier': { from: null, to: 'gold' },
      },
    });

    const bad: [unknown, RegExp][] = [
      [{ 'has space': 'x' }, /tag key/],
      [{ ['k'.repeat(129)]: 'x' }, /tag key/],
      [{ '': 'x' }, /tag key/],
      [{ ümlaut: 'x' }, /tag key/],
      [{ 'a:b': 'x' }, /tag key/],
      [{ ok: 'v'.repeat(1025) }, /1024/],
      [{ ok: 5 }, /string/],
      [{ ok: null }, /string/],
      [{ ok: { nested: 'x' } }, /string/],
      [Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, 'v'])), /at most 100/],
      [['a'], /tags/],
      ['a=b', /tags/],
      [undefined, /tags/],
    ];
    for (const [value, message] of bad) {
      const r = await engineer('PUT', url, value === undefined ? {} : { tags: value });
      expectStatus(r, 400);
      expect(r.json().error.code).toBe('bad_request');
      expect(r.json().error.message).toMatch(message);
    }
    // Nothing was half-written.
    expect((await engineer('GET', `/api/v1/hosts/${h.id}`)).json().data.tags).toEqual(tags);

    // A key that names an object property is just a key; a prototype-poisoning body is refused before any parsing.
    expect((await engineer('PUT', url, { tags: { constructor: 'c', toString: 't' } })).json().data.tags).toEqual({
      constructor: 'c',
      toString: 't',
    });
    const poisoned = await sys.http({
      method: 'PUT',
      url,
      headers: { 'content-type': 'application/json' },
      payload: '{"tags":{"__proto__":{"x":"y"},"a":"b"}}',
      token: root,
    });
    expectStatus(poisoned, 400);
    expect(poisoned.json().error.code).toBe('bad_request');

    const hundred = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, `v${i}`]));
    expect((await engineer('PUT', url, { tags: hundred })).json().data.tags).toEqual(hundred);
    expect((await engineer('PUT', url, { tags: {} })).json().data.tags).toEqual({});
    expectStatus(await engineer('PUT', `/api/v1/hosts/${randomUUID()}/tags`, { tags: {} }), 404);
  });

  it('deletes a host with its inventory and revokes its agent; audited', async () => {
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const { hostId, agentId } = await insertEnrolledHost(sys, env);
    // An earlier agent of the same host, already revoked, stays as it was.
    const earlier = await insertAgent(sys, env, { host_id: hostId, status: 'revoked' });
    await sys.sql(
      `INSERT INTO host_services (host_id, name, description, load_state, active_state, sub_state, enabled, main_pid, manager) VALUES (?, 'sshd', 'ssh', 'loaded', 'active', 'running', true, 1, 'systemd')`,
      [hostId],
    );
    await sys.sql(
      `INSERT INTO host_configs (id, host_id, config_type, config_data, version) VALUES (?, ?, 'watch_files', '{}', 1)`,
      [randomUUID(), hostId],
    );
    const call = api(sys, { token: root });
    expectStatus(await call('DELETE', `/api/v1/hosts/${hostId}`), 204);
    expectStatus(await call('GET', `/api/v1/hosts/${hostId}`), 404);
    expectStatus(await call('DELETE', `/api/v1/hosts/${hostId}`), 404);
    expect(await sys.sql(`SELECT host_id FROM host_services WHERE host_id = ?`, [hostId])).toEqual([]);
    expect(await sys.sql(`SELECT host_id FROM host_configs WHERE host_id = ?`, [hostId])).toEqual([]);
    const [agent] = await sys.sql<{ status: string; revoked_at: string | null }>(
      `SELECT status, revoked_at FROM agents WHERE id = ?`,
      [agentId],
    );
    expect(agent?.status).toBe('revoked');
    expect(agent?.revoked_at).not.toBeNull();
    const [before] = await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [earlier.id]);
    expect(before?.status).toBe('revoked');
    const audit = await waitForAudit(sys, root, { action: 'host.deleted', resource_id: hostId });
    expect(audit.details).toMatchObject({ client_id: client.id, environment_id: env.id, revoked_agents: [agentId] });
    await waitForAudit(sys, root, { action: 'agent.revoked', resource_id: agentId });
  });

  describe('tenant isolation', () => {
    it('404 for client B’s hosts on every route; 403 on A without the permission', async () => {
      const a = await createClient(sys);
      const b = await createClient(sys);
      const envA = await insertEnvironment(sys, a.id);
      const envB = await insertEnvironment(sys, b.id);
      const hostA = await insertHost(sys, envA, { hostname: 'a-host' });
      const hostB = await insertHost(sys, envB, { hostname: 'b-host', tags: { owner: 'b' } });

      const viewer = api(sys, { token: (await userWith(sys, 'Viewer', a.id)).token });
      const list = await viewer('GET', `/api/v1/environments/${envA.id}/hosts`);
      expectStatus(list, 200);
      expect((list.json().data as HostOut[]).map((h) => h.id)).toEqual([hostA.id]);
      expectStatus(await viewer('GET', `/api/v1/hosts/${hostA.id}`), 200);
      // The Viewer reads hosts but may neither tag nor delete them.
      expectStatus(await viewer('PUT', `/api/v1/hosts/${hostA.id}/tags`, { tags: { x: 'y' } }), 403);
      expectStatus(await viewer('DELETE', `/api/v1/hosts/${hostA.id}`), 403);
      const engineer = api(sys, { token: (await userWith(sys, 'Engineer', a.id)).token });
      expectStatus(await engineer('DELETE', `/api/v1/hosts/${hostA.id}`), 403);
      const admin = api(sys, { token: (await userWith(sys, 'Admin', a.id)).token });

      for (const who of [viewer, engineer, admin]) {
        for (const [method, url, body] of [
          ['GET', `/api/v1/environments/${envB.id}/hosts`],
          ['GET', `/api/v1/hosts/${hostB.id}`],
          ['PUT', `/api/v1/hosts/${hostB.id}/tags`, { tags: { owner: 'a' } }],
          ['DELETE', `/api/v1/hosts/${hostB.id}`],
        ] as const) {
          const res = await who(method, url, body);
          expectStatus(res, 404);
        }
      }
      const [row] = await sys.sql<{ tags: Record<string, string> }>(`SELECT tags FROM hosts WHERE id = ?`, [hostB.id]);
      expect(row?.tags).toEqual({ owner: 'b' });
      expectStatus(await admin('DELETE', `/api/v1/hosts/${hostA.id}`), 204);
    });
  });
});
