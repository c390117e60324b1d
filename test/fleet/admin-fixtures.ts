import { createUser as createNkeyUser } from '@nats-io/jwt';
import { connect, jwtAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { issueAgentCredentials } from '../support/agent-accounts.ts';
import { NATS_CA, NATS_URL } from '../support/env.ts';
import type { TestSystem } from '../support/system.ts';

/**
 * Set-up rows of the fleet administration tests (test/fleet/environments, hosts, agents-admin): environments, hosts
 * and agents straight into PostgreSQL (enrolment is not what these files test), and a real agent connection to the
 * broker for the revocation tests.
 */

export async function insertEnvironment(
  sys: TestSystem,
  clientId: string,
  name = `Env ${randomUUID().slice(0, 6)}`,
): Promise<{ id: string; client_id: string; name: string; slug: string }> {
  const id = randomUUID();
  const slug = `e-${id.slice(0, 8)}`;
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [id, clientId, name, slug]);
  return { id, client_id: clientId, name, slug };
}

export interface HostFields {
  hostname?: string;
  ip_address?: string;
  agent_status?: 'online' | 'offline';
  last_seen_at?: string | null;
  created_at?: string;
  tags?: Record<string, string>;
  labels?: Record<string, string>;
  agent_id?: string | null;
  memory_total_bytes?: number;
  cpu_cores?: number;
}

export async function insertHost(
  sys: TestSystem,
  env: { id: string; client_id: string },
  f: HostFields = {},
): Promise<{ id: string; hostname: string }> {
  const id = randomUUID();
  const hostname = f.hostname ?? `host-${id.slice(0, 8)}`;
  await sys.sql(
    `INSERT INTO hosts (id, environment_id, client_id, agent_id, hostname, ip_address, os, os_version, kernel_version, arch, cpu_cores, memory_total_bytes,
       agent_status, agent_version, last_seen_at, tags, labels, created_at)
     VALUES (?, ?, ?, ?, ?, ?, 'linux', '24.04', '6.8.0', 'amd64', ?, ?, ?, '1.2.3', ?, ?::jsonb, ?::jsonb, ?)`,
    [
      id,
      env.id,
      env.client_id,
      f.agent_id ?? null,
      hostname,
      f.ip_address ?? '10.0.0.1',
      f.cpu_cores ?? 4,
      f.memory_total_bytes ?? 8 * 1024 ** 3,
      f.agent_status ?? 'offline',
      f.last_seen_at ?? null,
      JSON.stringify(f.tags ?? {}),
      JSON.stringify(f.labels ?? {}),
      f.created_at ?? new Date().toISOString(),
    ],
  );
  return { id, hostname };
}

export interface AgentFields {
  id?: string;
  host_id?: string | null;
  status?: 'pending' | 'active' | 'revoked';
  public_key?: string;
  hostname?: string;
  created_at?: string;
}

/** A fresh user nkey's public key (`U…`), for agents that never connect. */
export const freshPublicKey = (): string => createNkeyUser().getPublicKey();

export async function insertAgent(
  sys: TestSystem,
  env: { id: string; client_id: string },
  f: AgentFields = {},
): Promise<{ id: string; public_key: string }> {
  const id = f.id ?? randomUUID();
  const status = f.status ?? 'active';
  const publicKey = f.public_key ?? freshPublicKey();
  await sys.sql(
    `INSERT INTO agents (id, client_id, environment_id, host_id, public_key, status, hostname, os, arch, agent_version, enrolled_at, revoked_at, credentials_expires_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'linux', 'amd64', '1.2.3', ?, ?, now() + interval '30 days', ?)`,
    [
      id,
      env.client_id,
      env.id,
      f.host_id ?? null,
      publicKey,
      status,
      f.hostname ?? `agent-${id.slice(0, 8)}`,
      status === 'pending' ? null : new Date().toISOString(),
      status === 'revoked' ? new Date().toISOString() : null,
      f.created_at ?? new Date().toISOString(),
    ],
  );
  return { id, public_key: publicKey };
}

/** An enrolled host: environment's host row with an active agent whose id it carries. */
export async function insertEnrolledHost(
  sys: TestSystem,
  env: { id: string; client_id: string },
  publicKey?: string,
  agentId: string = randomUUID(),
): Promise<{ hostId: string; agentId: string; publicKey: string }> {
  const host = await insertHost(sys, env, {
    agent_id: agentId,
    agent_status: 'online',
    last_seen_at: new Date().toISOString(),
  });
  const agent = await insertAgent(sys, env, {
    id: agentId,
    host_id: host.id,
    ...(publicKey ? { public_key: publicKey } : {}),
  });
  return { hostId: host.id, agentId, publicKey: agent.public_key };
}

const servers = NATS_URL.replace(/^nats:\/\//, '').split(',');

export interface LiveAgent {
  id: string;
  publicKey: string;
  nc: NatsConnection;
  jwt: string;
  seed: Uint8Array;
  inboxPrefix: string;
}

/**
 * An agent as enrolment leaves it: its own nkey, a user JWT in its own broker account (as the enrolment issues it), and an open connection to the broker that does not reconnect (so a revocation closes it).
 */
export async function connectAgent(agentId = randomUUID()): Promise<LiveAgent> {
  const kp = createNkeyUser();
  const issued = await issueAgentCredentials(agentId, kp.getPublicKey());
  const nc = await connect({
    servers,
    tls: { caFile: NATS_CA },
    authenticator: jwtAuthenticator(issued.jwt, kp.getSeed()),
    inboxPrefix: issued.inboxPrefix,
    reconnect: false,
    timeout: 3000,
  });
  return {
    id: agentId,
    publicKey: kp.getPublicKey(),
    nc,
    jwt: issued.jwt,
    seed: kp.getSeed(),
    inboxPrefix: issued.inboxPrefix,
  };
}

/** Whether the broker closes `nc` within `ms`. */
export async function closedWithin(nc: NatsConnection, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    nc.closed().then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms))),
  ]);
  clearTimeout(timer);
  return closed;
}

/** A new connection with the agent's (revoked) credentials: the error it is refused with, or undefined if accepted. */
export async function reconnectError(agent: LiveAgent): Promise<Error | undefined> {
  try {
    const nc = await connect({
      servers,
      tls: { caFile: NATS_CA },
      authenticator: jwtAuthenticator(agent.jwt, agent.seed),
      inboxPrefix: agent.inboxPrefix,
      reconnect: false,
      timeout: 3000,
    });
    await nc.close();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}
