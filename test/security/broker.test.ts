import { createUser, fmtCreds } from '@nats-io/jwt';
import { Svcm } from '@nats-io/services';
import {
  connect,
  credsAuthenticator,
  headers as natsHeaders,
  jwtAuthenticator,
  type NatsConnection,
} from '@nats-io/transport-node';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BrokerIssuer, seedFromFile } from '../../platform/broker/issuer.ts';
import { BrokerRevoker } from '../../platform/broker/revoker.ts';
import { agentInboxPrefix, servicePermissions, toolInboxPrefix } from '../../platform/broker/permissions.ts';
import { ensureTrust, newUserCreds, permissionsOf, samePermissions, subjectOf } from '../../platform/broker/trust.ts';
import { createLogger } from '../../platform/logger.ts';
import { agentRepliesRefused } from '../../platform/metrics.ts';
import { ActorHost } from '../../platform/serve.ts';
import { wireRequestSubject } from '../../platform/namespace.ts';
import { connectNats } from '../../platform/nats.ts';
import { ContextSigner, SignatureHeaders } from '../../platform/signing.ts';
import { Headers } from '../../contracts/envelope.ts';
import type { LiveAgent } from '../fleet/admin-fixtures.ts';
import { issueAgentCredentials } from '../support/agent-accounts.ts';
import {
  NATS_ADMIN_CREDS,
  NATS_CA,
  NATS_CREDS,
  NATS_FILES,
  NATS_URL,
  TEST_CONTEXT_KEY,
  testSigner,
} from '../support/env.ts';
import { sleep, waitFor } from '../support/processes.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { testCatalogue } from '../support/test-catalogue.ts';

/**
 * The broker as an outsider meets it: a real nats-server in operator mode with the project's configuration
 * (scripts/local-nats.ts), the credential classes of docs/operations.md → Security model, and actors that believe only a caller
 * context a service signed.
 */

const log = createLogger('silent');
const servers = NATS_URL.replace(/^nats:\/\//, '').split(',');
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The envelope an attacker would send: a super admin, made up. */
const forgedCtx = (): Record<string, unknown> => ({
  request_id: `forged-${randomUUID()}`,
  principal: {
    kind: 'user',
    user_id: randomUUID(),
    session_id: randomUUID(),
    email: 'x@evil.test',
    is_super_admin: true,
    mfa_enabled: true,
  },
  access: { super_admin: true, all_clients: [], clients: {} },
});

let sys: TestSystem;
let service: NatsConnection;
let issuer: BrokerIssuer;
const opened: NatsConnection[] = [];

/** A fresh agent: its own nkey (the seed never leaves "the host"), a user JWT from the issuer, a connection. */
interface TestAgent extends LiveAgent {
  /** The agent's own broker account; undefined for an agent of the service account (enrolled before accounts). */
  account?: string;
}

async function newAgent(ttlSeconds = 3600, legacy = false): Promise<TestAgent> {
  const id = randomUUID();
  const kp = createUser();
  const issued = legacy
    ? await issuer.agent(id, kp.getPublicKey(), ttlSeconds)
    : await issueAgentCredentials(id, kp.getPublicKey(), ttlSeconds);
  const nc = await connect({
    servers,
    tls: { caFile: NATS_CA },
    authenticator: jwtAuthenticator(issued.jwt, kp.getSeed()),
    inboxPrefix: issued.inboxPrefix,
    reconnectTimeWait: 100,
    maxReconnectAttempts: 20,
  });
  opened.push(nc);
  return {
    id,
    publicKey: kp.getPublicKey(),
    nc,
    jwt: issued.jwt,
    seed: kp.getSeed(),
    inboxPrefix: issued.inboxPrefix,
    ...('account' in issued && typeof issued.account === 'string' ? { account: issued.account } : {}),
  };
}

/** The error a subscription ends with (undefined when it is still open after `ms`). */
async function subscriptionError(nc: NatsConnection, subject: string, ms = 1500): Promise<Error | undefined> {
  const sub = nc.subscribe(subject);
  const result = await Promise.race([
    sub.closed.then((e) => e ?? new Error('closed without error')),
    sleep(ms).then(() => undefined),
  ]);
  if (!result) sub.unsubscribe();
  return result instanceof Error ? result : undefined;
}

/** Sends a raw request envelope on a catalogue subject, with the headers given. */
async function rawRequest(
  nc: NatsConnection,
  subject: string,
  body: Uint8Array,
  extra: Record<string, string>,
): Promise<{ ok: boolean; error?: { code: string } }> {
  const h = natsHeaders();
  for (const [k, v] of Object.entries(extra)) h.set(k, v);
  const msg = await nc.request(wireRequestSubject(subject), body, { timeout: 5000, headers: h });
  return JSON.parse(decoder.decode(msg.data)) as { ok: boolean; error?: { code: string } };
}

beforeAll(async () => {
  // A short replay window, so the stale-envelope test waits a second or two rather than thirty.
  sys = await startTestSystem({ SVC_CONTEXT_MAX_AGE_SECONDS: '2' });
  service = await connectNats(NATS_URL, 'security-test', log, NATS_CREDS, NATS_CA);
  issuer = await BrokerIssuer.fromFiles(NATS_CREDS, NATS_FILES.issuerKey);
});

afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => undefined);
  await service?.drain();
  await sys?.stop();
});

describe('who may connect', () => {
  it('refuses a connection without credentials', async () => {
    await expect(connect({ servers, tls: { caFile: NATS_CA }, reconnect: false, timeout: 3000 })).rejects.toThrow(
      /Authorization Violation|authentication/i,
    );
  });

  it('refuses a user whose JWT was not signed by the account (a self-made key pair)', async () => {
    const kp = createUser();
    const { encodeUser, createAccount } = await import('@nats-io/jwt');
    const jwt = await encodeUser('intruder', kp, createAccount(), { pub: { allow: ['>'] }, sub: { allow: ['>'] } });
    await expect(
      connect({
        servers,
        tls: { caFile: NATS_CA },
        authenticator: credsAuthenticator(fmtCreds(jwt, kp)),
        reconnect: false,
        timeout: 3000,
      }),
    ).rejects.toThrow(/Authorization Violation/);
  });
});

describe('a caller context is believed only when a service signed it', () => {
  const subject = 'svc.identity.users.list';
  const body = (): Uint8Array => encoder.encode(JSON.stringify({ ctx: forgedCtx(), input: { page: 1, per_page: 5 } }));

  it('refuses a forged super-admin envelope without a signature, sent with valid service credentials', async () => {
    const reply = await rawRequest(service, subject, body(), {
      [Headers.deadline]: String(Date.now() + 5000),
      [Headers.requestId]: 'forged-1',
    });
    expect(reply).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
  });

  it('refuses the same envelope signed with a wrong key, or with a signature of another payload', async () => {
    const payload = body();
    const deadline = Date.now() + 5000;
    const wrong = new ContextSigner('not-the-services-key-not-the-services-key').sign(
      wireRequestSubject(subject),
      'forged-2',
      deadline,
      payload,
    );
    expect(
      await rawRequest(service, subject, payload, {
        [Headers.deadline]: String(deadline),
        [Headers.requestId]: 'forged-2',
        [SignatureHeaders.signedAt]: wrong.signedAt,
        [SignatureHeaders.signature]: wrong.signature,
      }),
    ).toMatchObject({
      ok: false,
      error: { code: 'unauthorized' },
    });
    // A genuine signature lifted from another message does not carry over to a changed payload or subject.
    const genuine = new ContextSigner(TEST_CONTEXT_KEY).sign(
      wireRequestSubject(subject),
      'forged-3',
      deadline,
      encoder.encode('{"ctx":{},"input":{}}'),
    );
    expect(
      await rawRequest(service, subject, payload, {
        [Headers.deadline]: String(deadline),
        [Headers.requestId]: 'forged-3',
        [SignatureHeaders.signedAt]: genuine.signedAt,
        [SignatureHeaders.signature]: genuine.signature,
      }),
    ).toMatchObject({
      ok: false,
      error: { code: 'unauthorized' },
    });
    const otherSubject = new ContextSigner(TEST_CONTEXT_KEY).sign(
      wireRequestSubject('svc.identity.teams.list'),
      'forged-4',
      deadline,
      payload,
    );
    expect(
      await rawRequest(service, subject, payload, {
        [Headers.deadline]: String(deadline),
        [Headers.requestId]: 'forged-4',
        [SignatureHeaders.signedAt]: otherSubject.signedAt,
        [SignatureHeaders.signature]: otherSubject.signature,
      }),
    ).toMatchObject({
      ok: false,
      error: { code: 'unauthorized' },
    });
  });

  it('accepts a correctly signed envelope, and refuses it when replayed after its window', async () => {
    const payload = encoder.encode(
      JSON.stringify({ ctx: { ...forgedCtx(), request_id: 'replayed' }, input: { page: 1, per_page: 5 } }),
    );
    const deadline = Date.now() + 60_000;
    const signed = new ContextSigner(TEST_CONTEXT_KEY).sign(wireRequestSubject(subject), 'replayed', deadline, payload);
    const headers = {
      [Headers.deadline]: String(deadline),
      [Headers.requestId]: 'replayed',
      [SignatureHeaders.signedAt]: signed.signedAt,
      [SignatureHeaders.signature]: signed.signature,
    };
    expect(await rawRequest(service, subject, payload, headers)).toMatchObject({ ok: true });
    await sleep(2_300);
    expect(await rawRequest(service, subject, payload, headers)).toMatchObject({
      ok: false,
      error: { code: 'unauthorized' },
    });
  });
});

describe('agent credentials: only their own subjects', () => {
  it('cannot send a request to an actor subject', async () => {
    const a = await newAgent();
    await expect(
      a.nc.request(wireRequestSubject('svc.identity.users.list'), JSON.stringify({ ctx: forgedCtx(), input: {} }), {
        timeout: 2000,
      }),
    ).rejects.toThrow(/Permissions Violation/);
    await expect(a.nc.request('svc.identity.users.list', '{}', { timeout: 2000 })).rejects.toThrow(
      /Permissions Violation/,
    );
  });

  it("cannot subscribe to another agent's commands, to _INBOX.> or to another agent's inbox prefix", async () => {
    const a = await newAgent();
    const b = await newAgent();
    expect(await subscriptionError(a.nc, `svc.system.commands.${b.id}`)).toBeInstanceOf(Error);
    expect(await subscriptionError(a.nc, 'svc.system.commands.*')).toBeInstanceOf(Error);
    expect(await subscriptionError(a.nc, '_INBOX.>')).toBeInstanceOf(Error);
    expect(await subscriptionError(a.nc, `${b.inboxPrefix}.>`)).toBeInstanceOf(Error);
    expect(await subscriptionError(a.nc, `svc.agent.${b.id}.>`)).toBeInstanceOf(Error);
    // Its own commands are open to it.
    expect(await subscriptionError(a.nc, `svc.system.commands.${a.id}`, 300)).toBeUndefined();
  });

  it("cannot publish telemetry as another agent or fetch another agent's config", async () => {
    const a = await newAgent();
    const b = await newAgent();
    const seen: string[] = [];
    const sub = service.subscribe(`svc.agent.${b.id}.>`, {
      callback: (_e, m) => {
        seen.push(m.subject);
      },
    });
    await service.flush();
    a.nc.publish(`svc.agent.${b.id}.heartbeat`, '{}');
    await expect(a.nc.request(`svc.system.agent.config.${b.id}`, '', { timeout: 1000 })).rejects.toThrow(
      /Permissions Violation/,
    );
    await a.nc.flush().catch(() => undefined);
    await sleep(200);
    sub.unsubscribe();
    expect(seen).toEqual([]);
  });

  it("cannot publish into another agent's inbox or anywhere else under _INBOX.", async () => {
    const a = await newAgent();
    const b = await newAgent();
    const seen: string[] = [];
    // Only what the agent sends: other traffic under _INBOX. (the services' consumers' pull heartbeats) is not its.
    const forged = new Set([`${b.inboxPrefix}.forged`, '_INBOX.somebody.else']);
    const sub = service.subscribe('_INBOX.>', {
      callback: (_e, m) => {
        if (forged.has(m.subject)) seen.push(m.subject);
      },
    });
    await service.flush();
    a.nc.publish(`${b.inboxPrefix}.forged`, '{"spoofed":true}');
    a.nc.publish('_INBOX.somebody.else', '{}');
    await a.nc.flush().catch(() => undefined);
    await sleep(200);
    sub.unsubscribe();
    expect(seen).toEqual([]);
  });

  it('publishes its own telemetry, receives its commands, and fetches its own config with replies on its own inbox', async () => {
    const a = await newAgent();
    const telemetry: string[] = [];
    const tsub = service.subscribe(`svc.agent.${a.id}.>`, {
      callback: (_e, m) => {
        telemetry.push(`${m.subject} ${m.string()}`);
      },
    });
    // A config responder with service credentials (the fleet domain's role): identity from the subject's last token.
    const csub = service.subscribe('svc.system.agent.config.*', {
      callback: (_e, m) => {
        m.respond(JSON.stringify({ agent: m.subject.split('.').pop(), watch_files: { paths: ['/etc'] } }));
      },
    });
    await service.flush();
    a.nc.publish(`svc.agent.${a.id}.heartbeat`, '{"ok":true}');
    const reply = await a.nc.request(`svc.system.agent.config.${a.id}`, '', { timeout: 3000 });
    expect(reply.json()).toEqual({ agent: a.id, watch_files: { paths: ['/etc'] } });
    expect(reply.subject.startsWith(`${a.inboxPrefix}.`)).toBe(true);
    const commands: string[] = [];
    a.nc.subscribe(`svc.system.commands.${a.id}`, {
      callback: (_e, m) => {
        commands.push(m.string());
      },
    });
    await a.nc.flush();
    service.publish(`svc.system.commands.${a.id}`, '{"type":"config_update"}');
    await waitFor(() => telemetry.length === 1 && commands.length === 1, 3000, 'telemetry and command');
    expect(telemetry).toEqual([`svc.agent.${a.id}.heartbeat {"ok":true}`]);
    tsub.unsubscribe();
    csub.unsubscribe();
  });

  it('is refused once its JWT has expired', async () => {
    const id = randomUUID();
    const kp = createUser();
    const { jwt } = await issuer.agent(id, kp.getPublicKey(), 1);
    await sleep(2100);
    await expect(
      connect({
        servers,
        tls: { caFile: NATS_CA },
        authenticator: jwtAuthenticator(jwt, kp.getSeed()),
        reconnect: false,
        timeout: 3000,
      }),
    ).rejects.toThrow();
  });

  it('is disconnected at once when revoked, and refused when it reconnects', async () => {
    const a = await newAgent();
    const other = await newAgent();
    const statuses: string[] = [];
    void (async () => {
      for await (const s of a.nc.status()) statuses.push(s.type);
    })();
    const system = await connectNats(NATS_URL, 'security-revoker', log, NATS_FILES.systemCreds, NATS_CA);
    opened.push(system);
    const revoker = new BrokerRevoker(system, a.account!, seedFromFile(NATS_FILES.operatorKey));
    await revoker.revoke([a.publicKey]);
    expect(await revoker.revoked(a.publicKey)).toBeGreaterThan(0);
    await waitFor(() => statuses.includes('disconnect'), 5000, 'the revoked agent being disconnected');
    await expect(
      connect({
        servers,
        tls: { caFile: NATS_CA },
        authenticator: jwtAuthenticator(a.jwt, a.seed),
        reconnect: false,
        timeout: 3000,
      }),
    ).rejects.toThrow(/Authorization Violation/);
    // Its own reconnect loop keeps being refused; another agent is untouched.
    await sleep(500);
    expect(a.nc.isClosed() || statuses.filter((s) => s === 'reconnect').length === 0).toBe(true);
    await expect(other.nc.flush()).resolves.toBeUndefined();
    expect(other.nc.isClosed()).toBe(false);
  });
});

describe('an agent cannot make the services or JetStream publish where it may not', () => {
  /** Everything agent `b` can receive: its inbox and its commands. */
  function watch(b: TestAgent): string[] {
    const seen: string[] = [];
    for (const subject of [`${b.inboxPrefix}.>`, `svc.system.commands.${b.id}`])
      b.nc.subscribe(subject, { callback: (_e, m) => void seen.push(`${m.subject} ${m.string()}`) });
    return seen;
  }

  it('sends no JetStream acknowledgement of its telemetry to another agent, or to the JetStream API', async () => {
    const jsm = await jetstreamManager(service);
    const victim = `SEC_${randomUUID().slice(0, 8)}`;
    await jsm.streams.add({ name: victim, subjects: [`svc.sectest.${victim}.>`] });
    try {
      const js = jetstream(service);
      for (let i = 0; i < 3; i++) await js.publish(`svc.sectest.${victim}.m`, `m${i}`);
      const a = await newAgent();
      const b = await newAgent();
      const seen = watch(b);
      await b.nc.flush();
      const steered = [
        `$JS.API.STREAM.PURGE.${victim}`,
        `$JS.API.STREAM.DELETE.${victim}`,
        `${b.inboxPrefix}.stolen`,
        `svc.system.commands.${b.id}`,
      ];
      for (const reply of steered) a.nc.publish(`svc.agent.${a.id}.heartbeat`, '{}', { reply });
      await a.nc.flush();
      // Its own acknowledgement still comes back, so the stream did take the messages.
      const ack = await jetstream(a.nc).publish(`svc.agent.${a.id}.heartbeat`, '{}');
      expect(ack.seq).toBeGreaterThan(0);
      await sleep(500);
      expect((await jsm.streams.info(victim)).state.messages).toBe(3);
      expect(seen).toEqual([]);
    } finally {
      await adminJsm()
        .then((a) => a.streams.delete(victim))
        .catch(() => undefined);
    }
  });

  it("has a service's answer reach only itself, whatever reply subject it names", async () => {
    const a = await newAgent();
    const b = await newAgent();
    const seen = watch(b);
    await b.nc.flush();
    // A responder as naive as can be: it answers whatever reply subject the request carries.
    const csub = service.subscribe(`svc.system.agent.config.${a.id}`, {
      callback: (_e, m) => void m.respond('{"ok":true,"data":{}}'),
    });
    await service.flush();
    for (const reply of [`${b.inboxPrefix}.stolen`, `svc.system.commands.${b.id}`])
      a.nc.publish(`svc.system.agent.config.${a.id}`, '{}', { reply });
    await a.nc.flush();
    const own = await a.nc.request(`svc.system.agent.config.${a.id}`, '{}', { timeout: 3000 });
    expect(own.json()).toEqual({ ok: true, data: {} });
    await sleep(300);
    csub.unsubscribe();
    expect(seen).toEqual([]);
  });

  it('is answered by an agent endpoint only on its own inbox, also as a user of the service account', async () => {
    // An agent enrolled before agent accounts shares the service account: there the endpoint itself must refuse.
    const a = await newAgent(3600, true);
    const b = await newAgent(3600, true);
    const seen = watch(b);
    await b.nc.flush();
    const host = new ActorHost(service, testCatalogue, testSigner(), log);
    await host.serveAgents({
      domain: `sectest-${randomUUID().slice(0, 8)}`,
      name: 'sectest-config',
      prefix: 'svc.system.agent.config',
      request: z.object({}),
      handler: (agentId) => Promise.resolve(agentId === a.id ? { agent: agentId } : undefined),
    });
    try {
      const before = (await agentRepliesRefused.get()).values[0]?.value ?? 0;
      for (const reply of [`${b.inboxPrefix}.stolen`, `svc.system.commands.${b.id}`, `$JS.API.STREAM.NAMES`])
        a.nc.publish(`svc.system.agent.config.${a.id}`, '{}', { reply });
      await a.nc.flush();
      const own = await a.nc.request(`svc.system.agent.config.${a.id}`, '{}', { timeout: 3000 });
      expect(own.json()).toEqual({ ok: true, data: { agent: a.id } });
      await waitFor(
        async () => ((await agentRepliesRefused.get()).values[0]?.value ?? 0) - before >= 3,
        3000,
        'the refusals counted',
      );
      expect(seen).toEqual([]);
    } finally {
      await host.drain(1000);
    }
  });
});

describe('service credentials', () => {
  it('carry no response permissions (the server would track every delivery), and reach every inbox under _INBOX.', () => {
    const jwt = /-----BEGIN NATS USER JWT-----\s+(\S+)/.exec(readFileSync(NATS_CREDS, 'utf8'))![1]!;
    const perms = permissionsOf(jwt);
    expect(perms.resp).toBeUndefined();
    expect(perms.pub?.allow).toContain('_INBOX.>');
    // Agents' and tools' inboxes live there, so a service answers them through that allow list alone.
    expect(agentInboxPrefix('a1').startsWith('_INBOX.')).toBe(true);
    expect(toolInboxPrefix('t1').startsWith('_INBOX.')).toBe(true);
  });

  it('issued by an earlier build with other permissions are replaced, leaving the trust chain as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trust-'));
    await ensureTrust(dir);
    const accountJwt = readFileSync(join(dir, 'account.jwt'), 'utf8');
    const old = await newUserCreds('service', subjectOf(accountJwt), seedFromFile(join(dir, 'account-signing.nk')), {
      ...servicePermissions(),
      resp: { max: 1, ttl: 60_000_000_000 },
    });
    writeFileSync(join(dir, 'service.creds'), old.creds);
    await ensureTrust(dir);
    const renewed = readFileSync(join(dir, 'service.creds'), 'utf8');
    expect(renewed).not.toBe(new TextDecoder().decode(old.creds));
    expect(
      samePermissions(permissionsOf(/-----BEGIN NATS USER JWT-----\s+(\S+)/.exec(renewed)![1]!), servicePermissions()),
    ).toBe(true);
    expect(readFileSync(join(dir, 'account.jwt'), 'utf8')).toBe(accountJwt);
    // Current credentials are kept as they are.
    await ensureTrust(dir);
    expect(readFileSync(join(dir, 'service.creds'), 'utf8')).toBe(renewed);
  });
});

describe('tool credentials: read-only observers', () => {
  let tool: NatsConnection;
  let credsFile: string;
  let inboxPrefix: string;

  beforeAll(async () => {
    // Issued the way an operator does it: `npm run creds -- tool --name … --out …` (scripts/creds.ts).
    const dir = mkdtempSync(join(tmpdir(), 'svc-tool-'));
    credsFile = join(dir, 'tool.creds');
    const out = await new Promise<string>((resolve, reject) => {
      const env = {
        ...process.env,
        SVC_NATS_URL: NATS_URL,
        SVC_NATS_CREDS: NATS_CREDS,
        SVC_NATS_ISSUER_KEY: NATS_FILES.issuerKey,
        SVC_NATS_OPERATOR_KEY: NATS_FILES.operatorKey,
        SVC_NATS_SYSTEM_CREDS: NATS_FILES.systemCreds,
      };
      const child = spawn(
        process.execPath,
        ['scripts/creds.ts', 'tool', '--name', 'grafana-exporter', '--out', credsFile, '--expires-in', '1d'],
        { env },
      );
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`creds exited ${code}: ${text}`))));
    });
    inboxPrefix = /inbox prefix (\S+)/.exec(out)?.[1] ?? '';
    expect(inboxPrefix).toBe('_INBOX.tool-grafana-exporter');
    expect(statSync(credsFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(credsFile, 'utf8')).toMatch(
      /-----BEGIN NATS USER JWT-----[\s\S]+-----BEGIN USER NKEY SEED-----/,
    );
    tool = await connect({
      servers,
      tls: { caFile: NATS_CA },
      authenticator: credsAuthenticator(readFileSync(credsFile)),
      inboxPrefix,
    });
    opened.push(tool);
  });

  it('subscribes to svc.evt.> and sees events', async () => {
    const seen: string[] = [];
    const sub = tool.subscribe('svc.evt.>', {
      callback: (_e, m) => {
        seen.push(m.subject);
      },
    });
    await tool.flush();
    const subject = `svc.evt.securitytest.${randomUUID().slice(0, 8)}`;
    service.publish(subject, '{}');
    await waitFor(() => seen.includes(subject), 3000, 'the event reaching the tool');
    sub.unsubscribe();
  });

  it('discovers the services through $SRV', async () => {
    const pings = [];
    for await (const p of await new Svcm(tool).client({ maxWait: 1000, strategy: 'timer' }).ping()) pings.push(p);
    expect(pings.length).toBeGreaterThan(0);
  });

  it('cannot send a request, publish an event, touch JetStream, or read other subjects', async () => {
    await expect(tool.request(wireRequestSubject('svc.identity.users.list'), '{}', { timeout: 2000 })).rejects.toThrow(
      /Permissions Violation/,
    );
    await expect(tool.request('$JS.API.STREAM.NAMES', '', { timeout: 2000 })).rejects.toThrow(/Permissions Violation/);
    const errors: string[] = [];
    void (async () => {
      for await (const s of tool.status()) if (s.type === 'error') errors.push(String(s.error));
    })();
    tool.publish('svc.evt.securitytest.forged', '{}');
    await waitFor(
      () => errors.some((e) => /Permissions Violation for Publish/.test(e)),
      3000,
      'the publish being refused',
    );
    expect(await subscriptionError(tool, wireRequestSubject('svc.identity.users.list'))).toBeInstanceOf(Error);
    expect(await subscriptionError(tool, '_INBOX.>')).toBeInstanceOf(Error);
    expect(await subscriptionError(tool, 'svc.agent.>')).toBeInstanceOf(Error);
  });

  it("has the services' discovery answers reach only itself, whatever reply subject it names", async () => {
    const jsm = await jetstreamManager(service);
    const victim = `SEC_${randomUUID().slice(0, 8)}`;
    await jsm.streams.add({ name: victim, subjects: [`svc.sectest.${victim}.>`] });
    try {
      const js = jetstream(service);
      for (let i = 0; i < 3; i++) await js.publish(`svc.sectest.${victim}.m`, `m${i}`);
      const b = await newAgent();
      const seen: string[] = [];
      for (const subject of [`${b.inboxPrefix}.>`, `svc.system.commands.${b.id}`])
        b.nc.subscribe(subject, { callback: (_e, m) => void seen.push(m.subject) });
      await b.nc.flush();
      // Every service answers a ping; each answer goes to the reply subject the tool chose.
      for (const reply of [`$JS.API.STREAM.PURGE.${victim}`, `svc.system.commands.${b.id}`, `${b.inboxPrefix}.x`])
        tool.publish('$SRV.PING', '', { reply });
      await tool.flush();
      await sleep(1000);
      expect((await jsm.streams.info(victim)).state.messages).toBe(3);
      expect(seen).toEqual([]);
    } finally {
      await adminJsm()
        .then((a) => a.streams.delete(victim))
        .catch(() => undefined);
    }
  });
});

describe('the services may not destroy JetStream data', () => {
  it('cannot delete or purge a stream, or delete a message outside the dead-letter stream; the admin user can', async () => {
    const jsm = await jetstreamManager(service);
    const victim = `SEC_${randomUUID().slice(0, 8)}`;
    await jsm.streams.add({ name: victim, subjects: [`svc.sectest.${victim}.>`] });
    const ack = await jetstream(service).publish(`svc.sectest.${victim}.m`, 'm');
    await expect(jsm.streams.purge(victim)).rejects.toThrow(/Permissions Violation/);
    await expect(jsm.streams.deleteMessage(victim, ack.seq)).rejects.toThrow(/Permissions Violation/);
    await expect(jsm.streams.delete(victim)).rejects.toThrow(/Permissions Violation/);
    expect((await jsm.streams.info(victim)).state.messages).toBe(1);
    const admin = await adminJsm();
    expect((await admin.streams.purge(victim)).purged).toBe(1);
    expect(await admin.streams.delete(victim)).toBe(true);
  });
});

/** The maintenance user's JetStream manager, on a connection closed with the others. */
async function adminJsm(): Promise<JetStreamManager> {
  const nc = await connectNats(NATS_URL, 'security-admin', log, NATS_ADMIN_CREDS, NATS_CA);
  opened.push(nc);
  return jetstreamManager(nc);
}

describe('access tokens', () => {
  it('refuses a correctly signed token without exp', async () => {
    const key = new TextEncoder().encode(sys.config.SVC_JWT_SECRET);
    const forever = await new SignJWT({ sid: randomUUID(), email: 'admin@example.com', typ: 'access' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(randomUUID())
      .setIssuedAt()
      .sign(key);
    const res = await sys.http({ method: 'GET', url: '/api/v1/auth/me', token: forever });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ error: { code: 'unauthorized' } });
  });
});
