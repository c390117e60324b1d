import { createUser as createNkey, type KeyPair } from '@nats-io/nkeys';
import { readFileSync } from 'node:fs';
import { connect, jwtAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { decode } from '@nats-io/jwt';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { wireDurableName, wireDurableSubject } from '../../platform/namespace.ts';
import { DlqHeaders, dlqSubjectFor } from '../../contracts/streams.ts';
import { ConfigFetchReply, ConfigUpdateCommand } from '../../contracts/domains/agent-telemetry.ts';
import { AgentStatusChanged } from '../../contracts/domains/fleet-agents.ts';
import { jetstream } from '@nats-io/jetstream';
import { createClient } from '../support/identity.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';
import { capturingServiceLogger } from '../support/log-capture.ts';
import { waitFor } from '../support/processes.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, waitForAudit, type Method } from '../identity/admin-support.ts';

const log = createLogger('silent');
// The system's warnings, kept so a test that times out can say what the services saw meanwhile.
const systemLog = capturingServiceLogger('warn');
const servers = NATS_URL.replace(/^nats:\/\//, '').split(',');
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let sys: TestSystem;
let root: string;
let service: NatsConnection;
const opened: NatsConnection[] = [];
let call: (method: Method, url: string, payload?: unknown) => ReturnType<ReturnType<typeof api>>;

async function newEnvironment(clientId?: string): Promise<{ clientId: string; envId: string }> {
  const cid = clientId ?? (await createClient(sys)).id;
  const envId = randomUUID();
  await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [
    envId,
    cid,
    'Production',
    `prod-${envId.slice(0, 8)}`,
  ]);
  return { clientId: cid, envId };
}

async function installToken(envId: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await call('POST', `/api/v1/environments/${envId}/install-tokens`, body);
  expectStatus(res, 201);
  return (res.json() as { data: { token: string } }).data.token;
}

const sign = (kp: KeyPair, challenge: string): string =>
  Buffer.from(kp.sign(encoder.encode(challenge))).toString('base64url');

interface Enrolled {
  agent_id: string;
  host_id: string;
  nats_servers: string[];
  user_jwt: string;
  inbox_prefix: string;
  nats_ca?: string;
  kp: KeyPair;
}

async function enrol(token: string, hostname = `web-${randomUUID().slice(0, 6)}`): Promise<Enrolled> {
  const kp = createNkey();
  const start = await sys.http({
    method: 'POST',
    url: '/api/v1/agents/enroll',
    payload: { install_token: token, public_key: kp.getPublicKey(), hostname, os: 'debian', arch: 'x86_64' },
  });
  expectStatus(start, 200);
  const { agent_id, challenge } = (start.json() as { data: { agent_id: string; challenge: string } }).data;
  const done = await sys.http({
    method: 'POST',
    url: '/api/v1/agents/enroll/complete',
    payload: { agent_id, challenge, signature: sign(kp, challenge) },
  });
  expectStatus(done, 200);
  return { ...(done.json() as { data: Omit<Enrolled, 'kp'> }).data, kp };
}

async function agentConnection(a: Enrolled): Promise<NatsConnection> {
  const nc = await connect({
    servers,
    tls: { caFile: NATS_CA },
    authenticator: jwtAuthenticator(a.user_jwt, a.kp.getSeed()),
    inboxPrefix: a.inbox_prefix,
    reconnect: false,
    timeout: 5000,
  });
  opened.push(nc);
  return nc;
}

async function fetchConfig(
  nc: NatsConnection,
  agentId: string,
): Promise<{ ok: boolean; data?: ConfigFetchReply; error?: { code: string } }> {
  const msg = await nc.request(`svc.system.agent.config.${agentId}`, encoder.encode('{}'), { timeout: 5000 });
  return JSON.parse(decoder.decode(msg.data)) as { ok: boolean; data?: ConfigFetchReply; error?: { code: string } };
}

/** Publishes telemetry as the agent does: a request to the stream subject, answered by the stream's PubAck. */
async function publishTelemetry(nc: NatsConnection, agentId: string, kind: string, payload: unknown): Promise<void> {
  const ack = await nc.request(`svc.agent.${agentId}.${kind}`, encoder.encode(JSON.stringify(payload)), {
    timeout: 5000,
  });
  expect(JSON.parse(decoder.decode(ack.data))).toHaveProperty('seq');
}

/** Events of `subject` stored after `since` (ordered consumer over SVC_EVENTS). */
async function eventsOn<T>(subject: string, match: (p: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const js = jetstream(service);
  const consumer = await js.consumers.get('SVC_EVENTS', { filter_subjects: wireDurableSubject(subject) });
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      const m = await consumer.next({ expires: 1000 });
      if (!m) continue;
      const p = JSON.parse(decoder.decode(m.data)) as T;
      if (match(p)) return p;
    }
  } finally {
    await consumer.delete().catch(() => undefined);
  }
  throw new Error(`no matching event on ${subject}`);
}

/**
 * Holds a revocation of `agentId` open as revokeAgents writes it (the agent revoked; with `host`, its host offline),
 * runs `meanwhile`, waits until the heartbeat path waits on a lock in a statement LIKE `waiter`, commits, and waits
 * until that wait is over and a second more (what the heartbeat path does next takes far less).
 */
async function revokeAround(
  agentId: string,
  opts: { host: boolean; waiter: string },
  meanwhile: () => Promise<void>,
): Promise<void> {
  const waiting = async (): Promise<number> =>
    (
      await sys.sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE ?`,
        [opts.waiter],
      )
    )[0]!.n;
  const revoker = new pg.Client({ connectionString: sys.config.SVC_DB_URL });
  await revoker.connect();
  try {
    await revoker.query('BEGIN');
    await revoker.query(`UPDATE agents SET status = 'revoked', revoked_at = now(), updated_at = now() WHERE id = $1`, [
      agentId,
    ]);
    if (opts.host)
      await revoker.query(`UPDATE hosts SET agent_status = 'offline', updated_at = now() WHERE agent_id = $1`, [
        agentId,
      ]);
    await meanwhile();
    await waitFor(async () => (await waiting()) === 1, 10_000);
    await revoker.query('COMMIT');
  } finally {
    await revoker.end();
  }
  await waitFor(async () => (await waiting()) === 0, 10_000);
  await new Promise((r) => setTimeout(r, 1_000));
}

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem({ SVC_AGENT_STALE_TIMEOUT_SECONDS: '2' }, { log: systemLog.log }));
  call = api(sys, { token: root });
  service = await connectNats(NATS_URL, 'enrolment-test', log, NATS_CREDS, NATS_CA);
});

afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => undefined);
  await service?.drain();
  await sys?.stop();
});

describe('install tokens', () => {
  it('are created for an environment with a default of 24 hours, at most 7 days, and scoped by client', async () => {
    const { clientId, envId } = await newEnvironment();
    const res = await call('POST', `/api/v1/environments/${envId}/install-tokens`, {});
    expectStatus(res, 201);
    const t = (res.json() as { data: { id: string; token: string; expires_at: string } }).data;
    expect(Object.keys(t).sort()).toEqual(['expires_at', 'id', 'token']);
    expect(new Date(t.expires_at).getTime() - sys.clock.now()).toBe(86_400_000);
    const [stored] = await sys.sql<{ token_hash: Buffer; client_id: string }>(
      `SELECT token_hash, client_id FROM install_tokens WHERE id = ?`,
      [t.id],
    );
    expect(stored?.client_id).toBe(clientId);
    expect(stored?.token_hash.toString('utf8')).not.toContain(t.token.slice(7, 20));

    expectStatus(
      await call('POST', `/api/v1/environments/${envId}/install-tokens`, { expires_in_seconds: 7 * 86_400 + 1 }),
      400,
    );
    expectStatus(
      await call('POST', `/api/v1/environments/${envId}/install-tokens`, { expires_in_seconds: 'soon' }),
      400,
    );
    expectStatus(await call('POST', `/api/v1/environments/${randomUUID()}/install-tokens`, {}), 404);
    await waitForAudit(sys, root, { action: 'install_token.created', resource_id: t.id });

    // Another client's engineer: out of reach → 404; this client's viewer: in reach without agents:update → 403.
    const other = await createClient(sys);
    const outsider = await userWith(sys, 'Admin', other.id);
    expectStatus(
      await api(sys, { token: outsider.token })('POST', `/api/v1/environments/${envId}/install-tokens`, {}),
      404,
    );
    const viewer = await userWith(sys, 'Viewer', clientId);
    expectStatus(
      await api(sys, { token: viewer.token })('POST', `/api/v1/environments/${envId}/install-tokens`, {}),
      403,
    );
  });
});

describe('enrolment', () => {
  it('enrols an agent: the host is created in the token environment and the agent gets agent-class credentials', async () => {
    const { clientId, envId } = await newEnvironment();
    const token = await installToken(envId);
    const a = await enrol(token, 'db-1');
    expect(a.inbox_prefix).toBe(`_INBOX.agent-${a.agent_id}`);
    expect(a.nats_servers.length).toBeGreaterThan(0);
    // The broker's CA, for the agent to pin (SVC_NATS_CA).
    expect(a.nats_ca).toBe(readFileSync(NATS_CA, 'utf8'));
    const claims = decode<{ pub: { allow: string[] }; sub: { allow: string[] } }>(a.user_jwt);
    expect(claims.sub).toBe(a.kp.getPublicKey());
    expect(claims.nats.pub?.allow.sort()).toEqual(
      [`svc.agent.${a.agent_id}.>`, `svc.system.agent.config.${a.agent_id}`].sort(),
    );
    expect(claims.exp).toBeGreaterThan(Date.now() / 1000);
    const [host] = await sys.sql<{
      environment_id: string;
      client_id: string;
      hostname: string;
      agent_id: string;
      agent_status: string;
    }>(`SELECT environment_id, client_id, hostname, agent_id, agent_status FROM hosts WHERE id = ?`, [a.host_id]);
    expect(host).toEqual({
      environment_id: envId,
      client_id: clientId,
      hostname: 'db-1',
      agent_id: a.agent_id,
      agent_status: 'offline',
    });
    await waitForAudit(sys, root, { action: 'agent.enrolled', resource_id: a.agent_id });

    // The credentials work: config fetch answers with this agent's host.
    const nc = await agentConnection(a);
    const reply = await fetchConfig(nc, a.agent_id);
    expect(reply).toMatchObject({ ok: true, data: { agent_id: a.agent_id, host_id: a.host_id, configs: [] } });
    expect(ConfigFetchReply.safeParse(reply.data).success).toBe(true);
  });

  it('refuses a replayed token, an expired token, an unknown token, a wrong signature and a reused challenge, each audited', async () => {
    const { envId } = await newEnvironment();
    const token = await installToken(envId, { expires_in_seconds: 600 });
    await enrol(token);
    const kp = createNkey();
    const body = (t: string): Record<string, unknown> => ({
      install_token: t,
      public_key: kp.getPublicKey(),
      hostname: 'again',
    });

    const replay = await sys.http({ method: 'POST', url: '/api/v1/agents/enroll', payload: body(token) });
    expectStatus(replay, 401);
    expect(replay.json().error).toMatchObject({ code: 'unauthorized', message: 'install token was already used' });
    expect(replay.json().error.request_id).toBeTruthy();
    expectStatus(
      await sys.http({ method: 'POST', url: '/api/v1/agents/enroll', payload: body('svc_it_not-a-token') }),
      401,
    );

    const expiring = await installToken(envId, { expires_in_seconds: 60 });
    sys.clock.advance(61_000);
    const expired = await sys.http({ method: 'POST', url: '/api/v1/agents/enroll', payload: body(expiring) });
    expectStatus(expired, 401);
    expect(expired.json().error.message).toBe('install token has expired');

    // Wrong signature: refused, and that challenge is spent; the token is not.
    const fresh = await installToken(envId);
    const s1 = (await sys.http({ method: 'POST', url: '/api/v1/agents/enroll', payload: body(fresh) })).json().data as {
      agent_id: string;
      challenge: string;
    };
    const bad = await sys.http({
      method: 'POST',
      url: '/api/v1/agents/enroll/complete',
      payload: { ...s1, signature: sign(createNkey(), s1.challenge) },
    });
    expectStatus(bad, 401);
    expect(bad.json().error.message).toMatch(/signature/);
    const retrySame = await sys.http({
      method: 'POST',
      url: '/api/v1/agents/enroll/complete',
      payload: { ...s1, signature: sign(kp, s1.challenge) },
    });
    expectStatus(retrySame, 401);
    await waitForAudit(sys, root, { action: 'agent.enrollment_failed', resource_id: s1.agent_id }, (e) =>
      /signature/.test(String(e.details.reason)),
    );

    // A new challenge with the same (unspent) token succeeds once; replaying its completion is refused.
    const s2 = (await sys.http({ method: 'POST', url: '/api/v1/agents/enroll', payload: body(fresh) })).json().data as {
      agent_id: string;
      challenge: string;
    };
    const ok = await sys.http({
      method: 'POST',
      url: '/api/v1/agents/enroll/complete',
      payload: { ...s2, signature: sign(kp, s2.challenge) },
    });
    expectStatus(ok, 200);
    const reused = await sys.http({
      method: 'POST',
      url: '/api/v1/agents/enroll/complete',
      payload: { ...s2, signature: sign(kp, s2.challenge) },
    });
    expectStatus(reused, 401);
    expect(reused.json().error.message).toMatch(/challenge/);
    await waitForAudit(sys, root, { action: 'agent.enrollment_failed', resource_id: s2.agent_id });

    // Malformed input is a 400 with the envelope.
    const malformed = await sys.http({
      method: 'POST',
      url: '/api/v1/agents/enroll',
      payload: { install_token: fresh, public_key: 'not-a-key', hostname: 'x' },
    });
    expectStatus(malformed, 400);
    expect(malformed.json().error.message).toMatch(/public_key/);
    expectStatus(
      await sys.http({
        method: 'POST',
        url: '/api/v1/agents/enroll/complete',
        payload: { agent_id: 'x', challenge: 'y', signature: '!!' },
      }),
      400,
    );
  });
});

describe('credential renewal', () => {
  it('hands out fresh credentials with the config once the current ones are past half their lifetime', async () => {
    const { envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    const nc = await agentConnection(a);
    expect((await fetchConfig(nc, a.agent_id)).data?.credentials).toBeUndefined();
    // Ten days left of thirty: renewed.
    await sys.sql(`UPDATE agents SET credentials_expires_at = ? WHERE id = ?`, [
      new Date(sys.clock.now() + 10 * 86_400_000),
      a.agent_id,
    ]);
    const renewed = (await fetchConfig(nc, a.agent_id)).data?.credentials;
    expect(renewed).toBeDefined();
    const claims = decode(renewed!.user_jwt);
    expect(claims.sub).toBe(a.kp.getPublicKey());
    expect(Math.abs((claims.exp ?? 0) * 1000 - new Date(renewed!.expires_at).getTime())).toBeLessThan(1000);
    const [row] = await sys.sql<{ credentials_expires_at: Date }>(
      `SELECT credentials_expires_at FROM agents WHERE id = ?`,
      [a.agent_id],
    );
    expect(new Date(row!.credentials_expires_at).toISOString()).toBe(renewed!.expires_at);
    // The renewed JWT connects.
    const fresh = await connect({
      servers,
      tls: { caFile: NATS_CA },
      authenticator: jwtAuthenticator(renewed!.user_jwt, a.kp.getSeed()),
      inboxPrefix: a.inbox_prefix,
      reconnect: false,
      timeout: 5000,
    });
    opened.push(fresh);
    expect((await fetchConfig(fresh, a.agent_id)).ok).toBe(true);
  });
});

describe('an enrolled agent on the broker', () => {
  it('cannot publish on another agent subjects, fetch its config or read its commands', async () => {
    const { envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    const b = await enrol(await installToken(envId));
    const ncA = await agentConnection(a);
    const errors: Error[] = [];
    void (async () => {
      for await (const s of ncA.status()) if (s.type === 'error') errors.push(s.error as Error);
    })();
    // Publishing as B: the server refuses with a permissions violation (no PubAck comes back).
    await expect(
      ncA.request(`svc.agent.${b.agent_id}.heartbeat`, encoder.encode('{}'), { timeout: 1500 }),
    ).rejects.toThrow();
    await expect(fetchConfig(ncA, b.agent_id)).rejects.toThrow();
    const sub = ncA.subscribe(`svc.system.commands.${b.agent_id}`);
    const closed = await Promise.race([
      sub.closed.then((e) => e ?? new Error('closed')),
      new Promise((r) => setTimeout(() => r(undefined), 1500)),
    ]);
    expect(String(closed)).toMatch(/Permissions Violation/i);
    // And a request to a service subject is refused outright.
    await expect(ncA.request('svc.fleet.clients.list', encoder.encode('{}'), { timeout: 1500 })).rejects.toThrow();
  });
});

describe('watch config', () => {
  it('stores versions, 404 before the first PUT, 400 without paths, and sends config_update to an online agent; a restarted agent fetches it', async () => {
    const { clientId, envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    expectStatus(await call('GET', `/api/v1/hosts/${a.host_id}/watch-config`), 404);
    expectStatus(await call('PUT', `/api/v1/hosts/${a.host_id}/watch-config`, { paths: [] }), 400);
    expectStatus(await call('PUT', `/api/v1/hosts/${a.host_id}/watch-config`, { exclude_patterns: ['*.tmp'] }), 400);

    const nc = await agentConnection(a);
    const sub = nc.subscribe(`svc.system.commands.${a.agent_id}`, { max: 1 });
    await nc.flush();
    const put = await call('PUT', `/api/v1/hosts/${a.host_id}/watch-config`, {
      paths: ['/etc/nginx'],
      sensitive_files: ['/etc/nginx/key.pem'],
    });
    expectStatus(put, 200);
    const saved = put.json().data as { version: number; config_data: Record<string, unknown>; host_id: string };
    expect(saved).toMatchObject({ host_id: a.host_id, config_type: 'watch_files', version: 1 });
    expect(saved.config_data).toEqual({
      paths: ['/etc/nginx'],
      exclude_patterns: [],
      sensitive_files: ['/etc/nginx/key.pem'],
      max_file_size: 1_048_576,
    });
    for await (const m of sub) {
      const cmd = ConfigUpdateCommand.parse(JSON.parse(decoder.decode(m.data)));
      expect(cmd).toEqual({
        type: 'config_update',
        config_type: 'watch_files',
        version: 1,
        payload: saved.config_data,
      });
    }
    const second = await call('PUT', `/api/v1/hosts/${a.host_id}/watch-config`, {
      paths: ['/etc/nginx', '/srv'],
      max_file_size: 4096,
    });
    expect(second.json().data.version).toBe(2);
    const got = await call('GET', `/api/v1/hosts/${a.host_id}/watch-config`);
    expectStatus(got, 200);
    expect(got.json().data).toMatchObject({
      version: 2,
      config_data: { paths: ['/etc/nginx', '/srv'], max_file_size: 4096 },
    });

    // "Restarted": a new connection fetches the latest.
    await nc.close();
    const again = await agentConnection(a);
    const fetched = await fetchConfig(again, a.agent_id);
    expect(fetched.data?.configs).toEqual([
      expect.objectContaining({ config_type: 'watch_files', version: 2, payload: got.json().data.config_data }),
    ]);

    // Tenancy: another client's admin sees 404; a viewer of this client may read but not write.
    const other = await createClient(sys);
    expectStatus(
      await api(sys, { token: (await userWith(sys, 'Admin', other.id)).token })(
        'GET',
        `/api/v1/hosts/${a.host_id}/watch-config`,
      ),
      404,
    );
    const viewer = api(sys, { token: (await userWith(sys, 'Viewer', clientId)).token });
    expectStatus(await viewer('GET', `/api/v1/hosts/${a.host_id}/watch-config`), 200);
    expectStatus(await viewer('PUT', `/api/v1/hosts/${a.host_id}/watch-config`, { paths: ['/x'] }), 403);
  });
});

describe('agent status', () => {
  it('goes online on a heartbeat and offline after the stale timeout, each change a durable event', async () => {
    const { envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    const nc = await agentConnection(a);
    const hb = {
      sent_at: new Date().toISOString(),
      agent_version: '1.2.3',
      facts: { hostname: 'web-renamed', cpu_cores: 4, memory_total_bytes: 8 * 2 ** 30, os: 'debian' },
    };
    await publishTelemetry(nc, a.agent_id, 'heartbeat', hb);
    await waitFor(
      async () =>
        (await sys.sql<{ agent_status: string }>(`SELECT agent_status FROM hosts WHERE id = ?`, [a.host_id]))[0]
          ?.agent_status === 'online',
      10_000,
    );
    const [host] = await sys.sql<{ agent_version: string; hostname: string; cpu_cores: number; last_seen_at: Date }>(
      `SELECT agent_version, hostname, cpu_cores, last_seen_at FROM hosts WHERE id = ?`,
      [a.host_id],
    );
    expect(host).toMatchObject({ agent_version: '1.2.3', hostname: 'web-renamed', cpu_cores: 4 });
    expect(new Date(host!.last_seen_at).getTime()).toBe(sys.clock.now());
    const online = await eventsOn<AgentStatusChanged>(
      'svc.evt.fleet.agent_status',
      (e) => e.host_id === a.host_id && e.status === 'online',
    );
    expect(AgentStatusChanged.parse(online)).toMatchObject({
      agent_id: a.agent_id,
      previous: 'offline',
      environment_id: envId,
    });

    // Online already: the batched path stores new facts and the integration statuses, with no second status event.
    const seenBefore = new Date(host!.last_seen_at).getTime();
    sys.clock.advance(1_000);
    await publishTelemetry(nc, a.agent_id, 'heartbeat', {
      ...hb,
      sent_at: new Date().toISOString(),
      facts: { ...hb.facts, cpu_cores: 8 },
      integrations: [
        { integration_id: 'redis', collector_name: 'redis-resp', status: 'ok', status_message: 'PONG', enabled: true },
      ],
    });
    await waitFor(
      async () =>
        (await sys.sql<{ cpu_cores: number }>(`SELECT cpu_cores FROM hosts WHERE id = ?`, [a.host_id]))[0]
          ?.cpu_cores === 8,
      10_000,
    );
    const [after] = await sys.sql<{ last_seen_at: Date; agent_status: string }>(
      `SELECT last_seen_at, agent_status FROM hosts WHERE id = ?`,
      [a.host_id],
    );
    expect(new Date(after!.last_seen_at).getTime()).toBe(seenBefore + 1_000);
    expect(after!.agent_status).toBe('online');
    const integrations = await sys.sql<{ integration_id: string; status: string }>(
      `SELECT integration_id, status FROM host_integrations WHERE host_id = ?`,
      [a.host_id],
    );
    expect(integrations).toEqual([{ integration_id: 'redis', status: 'ok' }]);

    // No heartbeat for longer than the timeout (2 s in this file): offline.
    sys.clock.advance(2_500);
    await waitFor(
      async () =>
        (await sys.sql<{ agent_status: string }>(`SELECT agent_status FROM hosts WHERE id = ?`, [a.host_id]))[0]
          ?.agent_status === 'offline',
      10_000,
    );
    await eventsOn<AgentStatusChanged>(
      'svc.evt.fleet.agent_status',
      (e) => e.host_id === a.host_id && e.status === 'offline' && e.previous === 'online',
    );

    // And back.
    await publishTelemetry(nc, a.agent_id, 'heartbeat', { ...hb, sent_at: new Date().toISOString() });
    await waitFor(
      async () =>
        (await sys.sql<{ agent_status: string }>(`SELECT agent_status FROM hosts WHERE id = ?`, [a.host_id]))[0]
          ?.agent_status === 'online',
      10_000,
    );
  });

  it('brings many hosts online at once in batches: each host online with its facts, one status event each', async () => {
    const { envId } = await newEnvironment();
    const agents = await Promise.all(Array.from({ length: 12 }, async () => enrol(await installToken(envId))));
    const conns = await Promise.all(agents.map((a) => agentConnection(a)));
    // Every agent at once, as after a broker outage; one of them twice (an outbox flushed), the second heartbeat last.
    await Promise.all(
      agents.map((a, i) =>
        publishTelemetry(conns[i]!, a.agent_id, 'heartbeat', {
          sent_at: new Date().toISOString(),
          agent_version: `3.0.${i}`,
          facts: { hostname: `burst-${i}`, cpu_cores: i + 1 },
          ...(i === 1
            ? {
                integrations: [
                  {
                    integration_id: 'nginx',
                    collector_name: 'nginx-status',
                    status: 'ok',
                    status_message: '',
                    enabled: true,
                  },
                ],
              }
            : {}),
        }),
      ),
    );
    await publishTelemetry(conns[0]!, agents[0]!.agent_id, 'heartbeat', {
      sent_at: new Date().toISOString(),
      agent_version: '3.1.0',
    });
    const ids = agents.map((a) => a.host_id);
    const rowsOf = (): Promise<
      { id: string; agent_status: string; agent_version: string; hostname: string; cpu_cores: number }[]
    > => sys.sql(`SELECT id, agent_status, agent_version, hostname, cpu_cores FROM hosts WHERE id IN (?)`, [ids]);
    // Wide bounds: on a loaded machine the JetStream publishes inside the transitions' transaction can take seconds,
    // and a failed batch goes one by one. A timeout says where every host stood and what the services logged.
    const settled = async (cond: () => Promise<boolean>, what: string): Promise<void> => {
      try {
        await waitFor(cond, 45_000, what);
      } catch (err) {
        const rows = await rowsOf();
        throw new Error(
          `${(err as Error).message}\nhosts: ${JSON.stringify(rows)}\nwarnings: ${systemLog.raw.slice(-20).join('\n')}`,
        );
      }
    };
    await settled(
      async () =>
        (await rowsOf()).filter((r) => r.agent_status === 'online' && r.agent_version.startsWith('3.')).length === 12,
      'every host online',
    );
    await settled(
      async () => (await rowsOf()).find((r) => r.id === ids[0])?.agent_version === '3.1.0',
      "the first host's second heartbeat",
    );
    const rows = new Map((await rowsOf()).map((r) => [r.id, r]));
    agents.forEach((a, i) => {
      if (i > 0)
        expect(rows.get(a.host_id)).toMatchObject({
          agent_version: `3.0.${i}`,
          hostname: `burst-${i}`,
          cpu_cores: i + 1,
        });
    });
    // Its integration statuses are stored with the host coming online.
    expect(
      await sys.sql(`SELECT integration_id, status FROM host_integrations WHERE host_id = ?`, [agents[1]!.host_id]),
    ).toEqual([{ integration_id: 'nginx', status: 'ok' }]);
    // The second heartbeat sent no facts: the first's stay.
    expect(rows.get(ids[0]!)).toMatchObject({ agent_version: '3.1.0', hostname: 'burst-0', cpu_cores: 1 });

    const js = jetstream(service);
    const consumer = await js.consumers.get('SVC_EVENTS', {
      filter_subjects: wireDurableSubject('svc.evt.fleet.agent_status'),
    });
    const online = new Map<string, number>();
    try {
      for (;;) {
        const m = await consumer.next({ expires: 1000 });
        if (!m) break;
        const e = JSON.parse(decoder.decode(m.data)) as AgentStatusChanged;
        if (ids.includes(e.host_id) && e.status === 'online') {
          expect(e).toMatchObject({ previous: 'offline', environment_id: envId });
          online.set(e.host_id, (online.get(e.host_id) ?? 0) + 1);
        }
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
    expect([...online.keys()].sort()).toEqual([...ids].sort());
    expect([...online.values()].every((n) => n === 1)).toBe(true);
  }, 120_000);

  it("stores other hosts' heartbeats while one host's row is locked (a snapshot being stored), and that host's once it is free", async () => {
    const { envId } = await newEnvironment();
    const [a, b] = [await enrol(await installToken(envId)), await enrol(await installToken(envId))];
    const [ncA, ncB] = [await agentConnection(a), await agentConnection(b)];
    const versionOf = async (hostId: string): Promise<string | null | undefined> =>
      (await sys.sql<{ agent_version: string | null }>(`SELECT agent_version FROM hosts WHERE id = ?`, [hostId]))[0]
        ?.agent_version;
    const beat = (nc: NatsConnection, agentId: string, version: string): Promise<void> =>
      publishTelemetry(nc, agentId, 'heartbeat', { sent_at: new Date().toISOString(), agent_version: version });
    // Both online first (the status change takes the slow path); then their heartbeats go through the batches.
    await beat(ncA, a.agent_id, '1.0.0');
    await beat(ncB, b.agent_id, '1.0.0');
    await waitFor(
      async () => (await versionOf(a.host_id)) === '1.0.0' && (await versionOf(b.host_id)) === '1.0.0',
      10_000,
    );

    // Another transaction holds A's row as the inventory ingest does while it stores a snapshot.
    const locker = new pg.Client({ connectionString: sys.config.SVC_DB_URL });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT id FROM hosts WHERE id = $1 FOR NO KEY UPDATE', [a.host_id]);
      await beat(ncA, a.agent_id, '2.0.0-a');
      // A's batch is written (and, before the fix, stuck behind the lock) before B's heartbeat arrives.
      await new Promise((r) => setTimeout(r, 500));
      await beat(ncB, b.agent_id, '2.0.0-b');
      await waitFor(async () => (await versionOf(b.host_id)) === '2.0.0-b', 10_000);
      expect(await versionOf(a.host_id)).toBe('1.0.0');
      await locker.query('COMMIT');
      await waitFor(async () => (await versionOf(a.host_id)) === '2.0.0-a', 10_000);
    } finally {
      await locker.end();
    }
  });

  it("drops a heartbeat that waited on its host's row while the agent was being revoked", async () => {
    const { envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    const nc = await agentConnection(a);
    const hostOf = async (): Promise<{ agent_version: string | null; agent_status: string } | undefined> =>
      (
        await sys.sql<{ agent_version: string | null; agent_status: string }>(
          `SELECT agent_version, agent_status FROM hosts WHERE id = ?`,
          [a.host_id],
        )
      )[0];
    await publishTelemetry(nc, a.agent_id, 'heartbeat', { sent_at: new Date().toISOString(), agent_version: '1.0.0' });
    await waitFor(async () => (await hostOf())?.agent_status === 'online', 10_000);

    // A revocation in flight, as revokeAgents writes it: the agent revoked and its host offline, not committed yet.
    // The heartbeat is sent while the agent still reads as active: the batches skip the locked rows, the slow path
    // waits for them.
    await revokeAround(a.agent_id, { host: true, waiter: '%agents a%FOR UPDATE OF h%' }, () =>
      publishTelemetry(nc, a.agent_id, 'heartbeat', { sent_at: new Date().toISOString(), agent_version: '2.0.0' }),
    );
    expect(await hostOf()).toEqual({ agent_version: '1.0.0', agent_status: 'offline' });
  });

  it("does not bring a host online while its agent's revocation is being written, before its first heartbeat", async () => {
    const { envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    const nc = await agentConnection(a);
    // As revokeAgents writes it: the agent revoked; its host, offline since enrolment, is not touched. The batch
    // skips the locked agent; the slow path waits for it, then finds it revoked.
    await revokeAround(a.agent_id, { host: false, waiter: '%FOR SHARE OF a' }, () =>
      publishTelemetry(nc, a.agent_id, 'heartbeat', { sent_at: new Date().toISOString(), agent_version: '1.0.0' }),
    );
    const [host] = await sys.sql<{ agent_status: string; agent_version: string | null }>(
      `SELECT agent_status, agent_version FROM hosts WHERE id = ?`,
      [a.host_id],
    );
    expect(host).toEqual({ agent_status: 'offline', agent_version: '' });
  });

  it('dead-letters a malformed heartbeat and keeps taking good ones', async () => {
    const { envId } = await newEnvironment();
    const a = await enrol(await installToken(envId));
    const nc = await agentConnection(a);
    await publishTelemetry(nc, a.agent_id, 'heartbeat', { sent_at: 'yesterday', agent_version: 7 });
    const ack = await nc.request(`svc.agent.${a.agent_id}.heartbeat`, encoder.encode('not json'), { timeout: 5000 });
    expect(JSON.parse(decoder.decode(ack.data))).toHaveProperty('seq');
    await publishTelemetry(nc, a.agent_id, 'heartbeat', { sent_at: new Date().toISOString(), agent_version: '2.0.0' });
    await waitFor(
      async () =>
        (await sys.sql<{ agent_version: string }>(`SELECT agent_version FROM hosts WHERE id = ?`, [a.host_id]))[0]
          ?.agent_version === '2.0.0',
      10_000,
    );
    // Both bad ones are in the dead-letter stream with the reason.
    const dlq = await jetstream(service).consumers.get('SVC_DLQ', {
      filter_subjects: dlqSubjectFor(wireDurableName('fleet-telemetry-heartbeat')),
    });
    const reasons: string[] = [];
    // Other files' agents (unknown here) are dead-lettered on the same subject: read until ours are found.
    const until = Date.now() + 15_000;
    while (reasons.length < 2 && Date.now() < until) {
      const m = await dlq.next({ expires: 1000 });
      if (m && m.headers?.get(DlqHeaders.subject) === `svc.agent.${a.agent_id}.heartbeat`)
        reasons.push(m.headers.get(DlqHeaders.reason));
    }
    expect(reasons).toEqual(['malformed', 'malformed']);
  });
});
