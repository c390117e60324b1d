import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit } from '../identity/admin-support.ts';
import {
  closedWithin,
  connectAgent,
  insertAgent,
  insertEnrolledHost,
  insertEnvironment,
  insertHost,
  reconnectError,
  type LiveAgent,
} from './admin-fixtures.ts';

let sys: TestSystem;
let root: string;
const live: LiveAgent[] = [];

beforeAll(async () => ({ sys, root } = await startAdminSystem()));
afterAll(async () => {
  for (const a of live) await a.nc.close().catch(() => undefined);
  await sys?.stop();
});

interface AgentOut {
  id: string;
  client_id: string;
  environment_id: string;
  status: string;
  revoked_at: string | null;
  [k: string]: unknown;
}

const AGENT_KEYS = [
  'agent_version',
  'arch',
  'client_id',
  'created_at',
  'credentials_expires_at',
  'enrolled_at',
  'environment_id',
  'host_id',
  'hostname',
  'id',
  'os',
  'public_key',
  'revoked_at',
  'status',
];

/** A connected agent of `env`, enrolled on a host of its own. */
async function liveAgentOn(env: { id: string; client_id: string }): Promise<LiveAgent & { hostId: string }> {
  const agent = await connectAgent();
  live.push(agent);
  // The row carries the connected agent's id: its broker account is derived from it.
  const { hostId } = await insertEnrolledHost(sys, env, agent.publicKey, agent.id);
  return { ...agent, hostId };
}

async function expectCutOff(agent: LiveAgent): Promise<void> {
  expect(await closedWithin(agent.nc, 5_000)).toBe(true);
  expect((await reconnectError(agent))?.message).toMatch(/Authorization Violation/);
}

describe('agents: list', () => {
  it('lists enrolled agents (never pending) with filters and pagination', async () => {
    const client = await createClient(sys);
    const prod = await insertEnvironment(sys, client.id);
    const dev = await insertEnvironment(sys, client.id);
    const t = (m: number): string => new Date(Date.now() - m * 60_000).toISOString();
    const a1 = await insertAgent(sys, prod, { created_at: t(30) });
    const a2 = await insertAgent(sys, prod, { status: 'revoked', created_at: t(20) });
    const a3 = await insertAgent(sys, dev, { created_at: t(10) });
    const pending = await insertAgent(sys, dev, { status: 'pending', created_at: t(5) });
    const call = api(sys, { token: root });

    const res = await call('GET', `/api/v1/agents?client_id=${client.id}`);
    expectStatus(res, 200);
    expect(res.json().meta).toEqual({ total: 3, page: 1, per_page: 20 });
    const rows = res.json().data as AgentOut[];
    // Newest first.
    expect(rows.map((r) => r.id)).toEqual([a3.id, a2.id, a1.id]);
    expect(rows.map((r) => r.id)).not.toContain(pending.id);
    expect(Object.keys(rows[0]!).sort()).toEqual(AGENT_KEYS);
    expect(rows[0]).toMatchObject({
      client_id: client.id,
      environment_id: dev.id,
      status: 'active',
      public_key: a3.public_key,
      revoked_at: null,
      os: 'linux',
      arch: 'amd64',
    });
    expect(rows[1]).toMatchObject({ status: 'revoked' });
    expect(rows[1]!.revoked_at).toMatch(/Z$/);

    const ids = async (q: string): Promise<string[]> => {
      const r = await call('GET', `/api/v1/agents?client_id=${client.id}&${q}`);
      expectStatus(r, 200);
      return (r.json().data as AgentOut[]).map((x) => x.id);
    };
    expect(await ids('status=active')).toEqual([a3.id, a1.id]);
    expect(await ids('status=revoked')).toEqual([a2.id]);
    expect(await ids(`environment_id=${prod.id}`)).toEqual([a2.id, a1.id]);
    expect(await ids(`environment_id=${dev.id}&status=active`)).toEqual([a3.id]);
    expect(await ids('per_page=2&page=2')).toEqual([a1.id]);
    for (const q of ['status=pending', 'status=x', 'client_id=nope', 'environment_id=1', 'per_page=500'])
      expectStatus(await call('GET', `/api/v1/agents?${q}`), 400);
    expectStatus(await call('GET', `/api/v1/agents?client_id=${randomUUID()}`), 404);
    expectStatus(await call('GET', `/api/v1/agents?environment_id=${randomUUID()}`), 404);
  });
});

describe('agents: revoke', () => {
  it('DELETE revokes at the broker at once: the connection is closed and refused; the host stays, offline; a repeat is 204', async () => {
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const agent = await liveAgentOn(env);
    const bystander = await connectAgent();
    live.push(bystander);
    await agent.nc.flush();

    const call = api(sys, { token: root });
    expectStatus(await call('DELETE', `/api/v1/agents/${agent.id}`), 204);
    await expectCutOff(agent);
    // Another agent is untouched.
    await expect(bystander.nc.flush()).resolves.toBeUndefined();

    const [row] = (await call('GET', `/api/v1/agents?client_id=${client.id}`)).json().data as AgentOut[];
    expect(row).toMatchObject({ id: agent.id, status: 'revoked' });
    expect(row!.revoked_at).toMatch(/Z$/);
    const host = await call('GET', `/api/v1/hosts/${agent.hostId}`);
    expectStatus(host, 200);
    expect(host.json().data).toMatchObject({ agent_status: 'offline', agent_id: agent.id });

    // Idempotent: the agent is already revoked.
    expectStatus(await call('DELETE', `/api/v1/agents/${agent.id}`), 204);
    const again = (await call('GET', `/api/v1/agents?client_id=${client.id}`)).json().data[0] as AgentOut;
    expect(again.revoked_at).toBe(row!.revoked_at);
    const audit = await waitForAudit(sys, root, { action: 'agent.revoked', resource_id: agent.id });
    expect(audit.details).toMatchObject({ client_id: client.id, host_id: agent.hostId, public_key: agent.publicKey });
    const entries = (await call('GET', `/api/v1/audit-log?action=agent.revoked&resource_id=${agent.id}`)).json().data;
    expect(entries).toHaveLength(1);

    expectStatus(await call('DELETE', `/api/v1/agents/${randomUUID()}`), 404);
    const pending = await insertAgent(sys, env, { status: 'pending' });
    expectStatus(await call('DELETE', `/api/v1/agents/${pending.id}`), 404);
    expect((await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [pending.id]))[0]?.status).toBe(
      'pending',
    );
  });

  it('DELETE of a host revokes its agent at the broker', async () => {
    const client = await createClient(sys);
    const env = await insertEnvironment(sys, client.id);
    const agent = await liveAgentOn(env);
    expectStatus(await api(sys, { token: root })('DELETE', `/api/v1/hosts/${agent.hostId}`), 204);
    await expectCutOff(agent);
    expect((await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [agent.id]))[0]?.status).toBe(
      'revoked',
    );
  });

  it('DELETE of a client revokes its agents at the broker and drops them with it', async () => {
    const call = api(sys, { token: root });
    const created = await call('POST', '/api/v1/clients', { name: 'Doomed', slug: `doomed-${sys.tag}` });
    expectStatus(created, 201);
    const client = created.json().data as { id: string };
    const env1 = await insertEnvironment(sys, client.id);
    const env2 = await insertEnvironment(sys, client.id);
    const agents = [await liveAgentOn(env1), await liveAgentOn(env2)];
    const other = await liveAgentOn(await insertEnvironment(sys, (await createClient(sys)).id));

    expectStatus(await call('DELETE', `/api/v1/clients/${client.id}`), 204);
    for (const a of agents) await expectCutOff(a);
    expect(await sys.sql(`SELECT id FROM agents WHERE client_id = ?`, [client.id])).toEqual([]);
    expect(await sys.sql(`SELECT id FROM hosts WHERE client_id = ?`, [client.id])).toEqual([]);
    // Another client's agent stays connected.
    await expect(other.nc.flush()).resolves.toBeUndefined();
    expect(other.nc.isClosed()).toBe(false);
    const audit = await waitForAudit(sys, root, { action: 'client.deleted', resource_id: client.id });
    expect(audit.details).toMatchObject({ revoked_agents: 2 });
  });
});

describe('agents: tenant isolation', () => {
  it('404 for client B’s agents on every route and never listed; 403 on A without the permission', async () => {
    const a = await createClient(sys);
    const b = await createClient(sys);
    const envA = await insertEnvironment(sys, a.id);
    const envB = await insertEnvironment(sys, b.id);
    const agentA = await insertAgent(sys, envA);
    const agentB = await insertAgent(sys, envB);
    await insertHost(sys, envB);

    const admin = api(sys, { token: (await userWith(sys, 'Admin', a.id)).token });
    const list = await admin('GET', '/api/v1/agents?per_page=100');
    expectStatus(list, 200);
    const seen = (list.json().data as AgentOut[]).map((x) => x.id);
    expect(seen).toEqual([agentA.id]);
    expect(list.json().meta.total).toBe(1);
    expectStatus(await admin('GET', `/api/v1/agents?client_id=${b.id}`), 404);
    expectStatus(await admin('GET', `/api/v1/agents?environment_id=${envB.id}`), 404);
    expectStatus(await admin('DELETE', `/api/v1/agents/${agentB.id}`), 404);
    expect((await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [agentB.id]))[0]?.status).toBe(
      'active',
    );
    // Client A's own filters work.
    expect(
      ((await admin('GET', `/api/v1/agents?environment_id=${envA.id}`)).json().data as AgentOut[]).map((x) => x.id),
    ).toEqual([agentA.id]);

    // A Viewer holds no agents:* permission: 403 on A's agents and on the list; still 404 for B's.
    const viewer = api(sys, { token: (await userWith(sys, 'Viewer', a.id)).token });
    expectStatus(await viewer('GET', '/api/v1/agents'), 403);
    expectStatus(await viewer('DELETE', `/api/v1/agents/${agentA.id}`), 403);
    expectStatus(await viewer('DELETE', `/api/v1/agents/${agentB.id}`), 404);
    expect((await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [agentA.id]))[0]?.status).toBe(
      'active',
    );
  });
});
