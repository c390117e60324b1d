import { jetstream } from '@nats-io/jetstream';
import { fmtCreds } from '@nats-io/jwt';
import { createUser, type KeyPair } from '@nats-io/nkeys';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCompactMetricBatch, isCompactMetricBatch } from '../../contracts/domains/metric-wire.ts';
import {
  AgentEventBatch,
  Heartbeat,
  InventorySnapshot,
  MetricBatch,
  type TelemetryKind,
  type WatchFilesConfig,
} from '../../contracts/domains/agent-telemetry.ts';
import { streams, allStreams } from '../../contracts/streams.ts';
import { BrokerIssuer } from '../../platform/broker/issuer.ts';
import { ensureStreams } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { startAgent, type RunningAgent, type StartAgentOptions } from '../../agent/runner.ts';
import { createSyntheticCollector } from '../../agent/simulate/synthetic.ts';
import { statePaths, writeAgentState, writeBrokerCa, writeCredsFile, writeWatchConfig } from '../../agent/state.ts';
import type { FileWatcher, OnFileChanges } from '../../agent/collect/types.ts';
import { NATS_CA, NATS_CREDS, NATS_FILES, NATS_URL } from '../support/env.ts';
import { freePort, sleep, startNatsServer, stopProcess, waitFor } from '../support/processes.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';

/**
 * The reference agent against the real authenticated broker, with credentials issued the way enrolment issues them
 * (its own key pair, a user JWT for its public key): what it publishes must land in SVC_TELEMETRY, once, and parse.
 */

const log = createLogger(process.env.AGENT_TEST_LOG ?? 'silent');
const decoder = new TextDecoder();
const encoder = new TextEncoder();

let service: NatsConnection;
let issuer: BrokerIssuer;
const dirs: string[] = [];
const agents: RunningAgent[] = [];
const subs: Subscription[] = [];
const proxies: TcpProxy[] = [];

interface Provisioned {
  id: string;
  dir: string;
  kp: KeyPair;
}

/** An enrolled agent's state directory, as `enroll` leaves it. */
async function provision(
  opts: { ttlSeconds?: number; servers?: string[]; labels?: Record<string, string> } = {},
): Promise<Provisioned> {
  const id = randomUUID();
  const kp = createUser();
  const issued = await issuer.agent(id, kp.getPublicKey(), opts.ttlSeconds ?? 3600);
  const dir = mkdtempSync(join(tmpdir(), 'agent-test-'));
  dirs.push(dir);
  await writeCredsFile(dir, fmtCreds(issued.jwt, kp));
  await writeBrokerCa(dir, readFileSync(NATS_CA, 'utf8'));
  await writeAgentState(dir, {
    agent_id: id,
    host_id: randomUUID(),
    nats_servers: opts.servers ?? [NATS_URL],
    inbox_prefix: issued.inboxPrefix,
    enrolled_at: new Date().toISOString(),
    labels: opts.labels ?? {},
  });
  return { id, dir, kp };
}

/** A watcher that records what it was given and lets the test report file changes. */
function recordingWatcher(): {
  factory: (on: OnFileChanges) => FileWatcher;
  applied: WatchFilesConfig[];
  emit: OnFileChanges;
} {
  const rec = {
    applied: [] as WatchFilesConfig[],
    emit: (() => undefined) as OnFileChanges,
    factory: (on: OnFileChanges): FileWatcher => {
      rec.emit = on;
      return { apply: async (c) => void rec.applied.push(c), stop: async () => undefined };
    },
  };
  return rec;
}

async function start(p: Provisioned, extra: Partial<StartAgentOptions> = {}): Promise<RunningAgent> {
  const agent = await startAgent({
    stateDir: p.dir,
    collector: createSyntheticCollector(12),
    watcher: recordingWatcher().factory,
    log,
    intervalMs: 500,
    publishTimeoutMs: 1_000,
    configRetryMinMs: 200,
    outbox: { retryMinMs: 100, retryMaxMs: 500 },
    connection: {
      reconnectTimeWaitMs: 100,
      reconnectJitterMs: 50,
      retryMinMs: 100,
      retryMaxMs: 500,
      connectTimeoutMs: 1_000,
    },
    ...extra,
  });
  agents.push(agent);
  return agent;
}

interface Stored {
  subject: string;
  kind: TelemetryKind;
  msgId: string;
  seq: number;
  /** The payload as JSON would give it (a compact metric batch decoded to its objects). */
  json: unknown;
  /** Sent in the compact metric form (metric-wire.ts) rather than as JSON text. */
  compact: boolean;
}

function payloadOf(data: Uint8Array): { json: unknown; compact: boolean } {
  if (isCompactMetricBatch(data)) return { json: decodeCompactMetricBatch(data).toBatch(), compact: true };
  return { json: JSON.parse(decoder.decode(data)), compact: false };
}

/** Everything the stream holds for one agent, read with an ephemeral ordered consumer. */
async function stored(agentId: string, nc: NatsConnection = service): Promise<Stored[]> {
  const consumer = await jetstream(nc).consumers.get(streams.SVC_TELEMETRY.name, {
    filter_subjects: `svc.agent.${agentId}.*`,
  });
  const out: Stored[] = [];
  let pending = (await consumer.info()).num_pending;
  while (pending > 0) {
    const batch = await consumer.fetch({ max_messages: Math.min(pending, 500), expires: 2_000 });
    let got = 0;
    for await (const m of batch) {
      got++;
      out.push({
        subject: m.subject,
        kind: m.subject.split('.').pop() as TelemetryKind,
        msgId: m.headers?.get('Nats-Msg-Id') ?? '',
        seq: m.seq,
        ...payloadOf(m.data),
      });
      pending = m.info.pending;
    }
    if (got === 0) break;
  }
  return out;
}

const ofKind = (all: Stored[], kind: TelemetryKind): Stored[] => all.filter((m) => m.kind === kind);

/** A service answering the agent's config fetch, the way the fleet domain will. */
function configResponder(
  agentId: string,
  reply: (n: number) => unknown,
  nc: NatsConnection = service,
): { calls: () => number } {
  let n = 0;
  const sub = nc.subscribe(`svc.system.agent.config.${agentId}`, {
    callback: (_err, msg) => {
      n++;
      expect(JSON.parse(decoder.decode(msg.data))).toEqual({});
      msg.respond(encoder.encode(JSON.stringify(reply(n))));
    },
  });
  subs.push(sub);
  return { calls: () => n };
}

const watchConfig = (path: string): WatchFilesConfig => ({
  paths: [path],
  exclude_patterns: [],
  sensitive_files: [],
  max_file_size: 1024,
});

beforeAll(async () => {
  service = await connectNats(NATS_URL, 'agent-test', log, NATS_CREDS, NATS_CA);
  await ensureStreams(service, allStreams);
  issuer = await BrokerIssuer.fromFiles(NATS_CREDS, NATS_FILES.issuerKey);
});

afterAll(async () => {
  await Promise.allSettled(agents.map((a) => a.stop(1_000)));
  for (const s of subs) s.unsubscribe();
  for (const p of proxies) await p.close();
  await service?.drain();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('telemetry', () => {
  it('publishes heartbeats, metrics and an inventory snapshot that land in SVC_TELEMETRY and parse with their schemas', async () => {
    const p = await provision({ labels: { role: 'db', env: 'test' } });
    const agent = await start(p);
    await waitFor(async () => ofKind(await stored(p.id), 'metrics').length >= 2, 10_000, 'two metric batches');
    const all = await stored(p.id);

    const heartbeats = ofKind(all, 'heartbeat').map((m) => Heartbeat.parse(m.json));
    expect(heartbeats.length).toBeGreaterThanOrEqual(2);
    // The first carries the facts and the integrations with their configuration; later ones only statuses.
    expect(heartbeats[0]!.facts).toMatchObject({ hostname: 'sim-12', arch: 'x86_64' });
    expect(heartbeats[0]!.integrations?.length).toBeGreaterThan(0);
    expect(heartbeats[0]!.integrations?.every((i) => i.config !== undefined)).toBe(true);
    expect(heartbeats[1]!.facts).toBeUndefined();
    expect(heartbeats[1]!.integrations?.every((i) => i.config === undefined)).toBe(true);

    // Metric batches travel in the compact form, everything else as JSON.
    expect(all.filter((m) => m.compact).map((m) => m.kind)).toEqual(ofKind(all, 'metrics').map(() => 'metrics'));
    const metrics = ofKind(all, 'metrics').map((m) => MetricBatch.parse(m.json));
    expect(metrics[0]!.samples.length).toBeGreaterThanOrEqual(50);

    const [snapshot, ...more] = ofKind(all, 'inventory').map((m) => InventorySnapshot.parse(m.json));
    expect(more).toHaveLength(0);
    expect(snapshot!.labels).toEqual({ role: 'db', env: 'test' });
    expect(snapshot!.processes.length).toBe(300);
    expect(snapshot!.packages.length).toBeGreaterThanOrEqual(1_500);
    expect(snapshot!.integrations.length).toBeGreaterThan(0);
    expect(snapshot!.integrations.every((i) => i.config !== undefined)).toBe(true);
    expect(snapshot!.agent_version).toMatch(/^\d+\.\d+\.\d+$/);

    // Every message names itself for deduplication: <agent_id>:<kind>:<unique>.
    for (const m of all) expect(m.msgId).toMatch(new RegExp(`^${p.id}:${m.kind}:\\S+$`));
    expect(new Set(all.map((m) => m.msgId)).size).toBe(all.length);
    expect(agent.stats().outbox.kinds.heartbeat.stored).toBeGreaterThanOrEqual(2);
  });

  it('batches file changes reported by the watcher into events', async () => {
    const p = await provision();
    const watcher = recordingWatcher();
    await start(p, { watcher: watcher.factory, intervalMs: 60_000, eventBatchMs: 200 });
    const time = new Date().toISOString();
    watcher.emit([
      { type: 'file_change', time, path: '/etc/hosts', change: 'modified', size_bytes: 120, sha256: 'a'.repeat(64) },
    ]);
    watcher.emit([
      { type: 'file_change', time, path: '/etc/shadow', change: 'modified', sensitive: true },
      { type: 'file_change', time, path: '/etc/old.conf', change: 'deleted' },
    ]);
    await waitFor(async () => ofKind(await stored(p.id), 'events').length > 0, 5_000, 'an events batch');
    const batches = ofKind(await stored(p.id), 'events').map((m) => AgentEventBatch.parse(m.json));
    expect(batches).toHaveLength(1);
    expect(batches[0]!.events.map((e) => e.path)).toEqual(['/etc/hosts', '/etc/shadow', '/etc/old.conf']);
  });

  it('stops cleanly: what is pending is stored, then nothing more is sent', async () => {
    const p = await provision();
    const agent = await start(p);
    await waitFor(() => agent.stats().outbox.kinds.heartbeat.stored > 0, 5_000, 'a heartbeat');
    expect(await agent.stop(3_000)).toBe(true);
    const count = (await stored(p.id)).length;
    expect(count).toBe(Object.values(agent.stats().outbox.kinds).reduce((s, k) => s + k.stored - k.duplicates, 0));
    await sleep(800);
    expect((await stored(p.id)).length).toBe(count);
  });
});

describe('config fetch', () => {
  // Its own broker (same configuration and trust chain): a system running beside the tests on the shared broker
  // answers every agent's config fetch too (the subject is not namespaced), and its "not enrolled" would race ours.
  let server: ChildProcess | undefined;
  let own: NatsConnection;
  let ownUrl: string;
  beforeAll(async () => {
    const port = await freePort();
    const storeDir = mkdtempSync(join(tmpdir(), 'agent-nats-'));
    dirs.push(storeDir);
    server = startNatsServer(port, storeDir);
    ownUrl = `nats://127.0.0.1:${port}`;
    own = await connectNats(ownUrl, 'agent-test-own', log, NATS_CREDS, NATS_CA);
    await ensureStreams(own, [streams.SVC_TELEMETRY]);
  });
  afterAll(async () => {
    await Promise.allSettled(agents.map((a) => a.stop(1_000)));
    await own?.drain();
    await stopProcess(server);
  });

  it('applies the saved config at start, then the fetched one; credentials in the reply rewrite agent.creds and are used after the old JWT expires', async () => {
    // A JWT that expires during the test: the agent only keeps publishing if it reconnects with the renewed one.
    const p = await provision({ ttlSeconds: 4, servers: [ownUrl] });
    await writeWatchConfig(p.dir, { version: 3, payload: watchConfig('/etc/saved') });
    const renewed = await issuer.agent(p.id, p.kp.getPublicKey(), 3600);
    const responder = configResponder(
      p.id,
      () => ({
        ok: true,
        data: {
          agent_id: p.id,
          host_id: randomUUID(),
          configs: [
            {
              config_type: 'watch_files',
              version: 5,
              payload: watchConfig('/etc/fetched'),
              updated_at: new Date().toISOString(),
            },
          ],
          credentials: { user_jwt: renewed.jwt, expires_at: new Date(renewed.expiresAt * 1000).toISOString() },
        },
      }),
      own,
    );
    const watcher = recordingWatcher();
    const agent = await start(p, { watcher: watcher.factory });
    await agent.configFetched;
    expect(responder.calls()).toBe(1);
    expect(watcher.applied.map((c) => c.paths[0])).toEqual(['/etc/saved', '/etc/fetched']);
    expect(agent.configVersion).toBe(5);
    expect(JSON.parse(readFileSync(statePaths(p.dir).watchFiles, 'utf8'))).toEqual({
      version: 5,
      payload: watchConfig('/etc/fetched'),
    });

    const creds = readFileSync(statePaths(p.dir).creds, 'utf8');
    expect(creds).toContain(renewed.jwt);
    expect(creds).toContain(new TextDecoder().decode(p.kp.getSeed()));
    expect(statSync(statePaths(p.dir).creds).mode & 0o777).toBe(0o600);

    // Past the first JWT's expiry the server drops the connection; the agent is back with the renewed one.
    const expiredAt = Date.now() + 4_500;
    await sleep(expiredAt - Date.now());
    await waitFor(
      async () =>
        ofKind(await stored(p.id, own), 'heartbeat').some(
          (m) => Date.parse(Heartbeat.parse(m.json).sent_at) > expiredAt + 500,
        ),
      15_000,
      'a heartbeat after the first JWT expired',
    );
    expect(agent.stats().broker_connects).toBeGreaterThanOrEqual(2);
  });

  it('keeps asking for its config until someone answers, while it already publishes', async () => {
    const p = await provision({ servers: [ownUrl] });
    const agent = await start(p, { configRetryMinMs: 100 });
    await waitFor(() => agent.stats().outbox.kinds.heartbeat.stored > 0, 5_000, 'a heartbeat');
    expect(agent.stats().config_fetches).toBe(0);
    configResponder(
      p.id,
      () => ({
        ok: true,
        data: {
          agent_id: p.id,
          host_id: randomUUID(),
          configs: [
            {
              config_type: 'watch_files',
              version: 2,
              payload: watchConfig('/srv'),
              updated_at: new Date().toISOString(),
            },
          ],
        },
      }),
      own,
    );
    await agent.configFetched;
    expect(agent.configVersion).toBe(2);
  });
});

describe('commands', () => {
  it('applies a newer config_update command, ignores an older one, and refuses an invalid one', async () => {
    const p = await provision();
    await writeWatchConfig(p.dir, { version: 4, payload: watchConfig('/etc/saved') });
    const watcher = recordingWatcher();
    const agent = await start(p, { watcher: watcher.factory });
    // Connected means the broker has the command subscription (the link flushes it before it says it is up).
    await waitFor(() => agent.connected, 5_000, 'the agent connecting');
    const subject = `svc.system.commands.${p.id}`;
    const command = (version: number, path: string) =>
      encoder.encode(
        JSON.stringify({ type: 'config_update', config_type: 'watch_files', version, payload: watchConfig(path) }),
      );

    const ok = await service.request(subject, command(6, '/var/www'), { timeout: 3_000 });
    expect(ok.json()).toEqual({ ok: true });
    expect(agent.configVersion).toBe(6);
    expect(watcher.applied.at(-1)!.paths).toEqual(['/var/www']);
    expect(JSON.parse(readFileSync(statePaths(p.dir).watchFiles, 'utf8'))).toEqual({
      version: 6,
      payload: watchConfig('/var/www'),
    });

    const older = await service.request(subject, command(5, '/old'), { timeout: 3_000 });
    expect(older.json()).toEqual({ ok: true });
    expect(agent.configVersion).toBe(6);
    expect(watcher.applied.at(-1)!.paths).toEqual(['/var/www']);

    const bad = await service.request(
      subject,
      encoder.encode(
        JSON.stringify({ type: 'config_update', config_type: 'watch_files', version: 9, payload: { paths: [] } }),
      ),
      { timeout: 3_000 },
    );
    expect(bad.json()).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    const notJson = await service.request(subject, encoder.encode('{'), { timeout: 3_000 });
    expect(notJson.json()).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(agent.configVersion).toBe(6);

    // A plain publish (no reply wanted) is applied too.
    service.publish(subject, command(7, '/opt'));
    await waitFor(() => agent.configVersion === 7, 3_000, 'the published command');
    expect(watcher.applied.at(-1)!.paths).toEqual(['/opt']);
  });

  it('is connected only once the broker has its command subscription, even over a slow link', async () => {
    const proxy = await TcpProxy.forNats(NATS_URL);
    proxies.push(proxy);
    // The agent's bytes reach the broker 300 ms late: a link that said "up" before its SUB arrived left a command
    // sent at that moment without a responder.
    proxy.delayUpstream(300);
    const p = await provision({ servers: [proxy.url] });
    const agent = await start(p, {
      connection: {
        reconnectTimeWaitMs: 100,
        reconnectJitterMs: 50,
        retryMinMs: 100,
        retryMaxMs: 500,
        connectTimeoutMs: 5_000,
      },
    });
    await waitFor(() => agent.connected, 10_000, 'the agent connecting');
    const command = encoder.encode(
      JSON.stringify({
        type: 'config_update',
        config_type: 'watch_files',
        version: 3,
        payload: watchConfig('/srv/slow'),
      }),
    );
    const res = await service.request(`svc.system.commands.${p.id}`, command, { timeout: 5_000 });
    expect(res.json()).toEqual({ ok: true });
    expect(agent.configVersion).toBe(3);
  });
});

describe('buffering', () => {
  it('starts without a broker, buffers while it is away, and stores every message exactly once when it is back', async () => {
    const proxy = await TcpProxy.forNats(NATS_URL);
    proxies.push(proxy);
    proxy.cut();
    const p = await provision({ servers: [proxy.url] });
    const agent = await start(p, { intervalMs: 300 });

    // No broker at start: collection runs and the outbox fills.
    await waitFor(() => agent.stats().outbox.kinds.metrics.added >= 3, 5_000, 'metrics collected without a broker');
    expect(agent.connected).toBe(false);
    expect(agent.stats().outbox.pending).toBeGreaterThanOrEqual(3);

    proxy.open();
    await waitFor(() => agent.connected && agent.stats().outbox.pending === 0, 10_000, 'the backlog stored');
    expect(ofKind(await stored(p.id), 'inventory')).toHaveLength(1);

    // Acks lost: the server stores what the agent sends, the agent hears nothing back and retries the same ids.
    proxy.blackhole();
    await waitFor(() => agent.stats().outbox.sendFailures >= 2, 10_000, 'publishes without acks');
    // Then the broker is away entirely for a while.
    proxy.cut();
    const outageFrom = Date.now();
    await waitFor(() => !agent.connected, 5_000, 'the disconnect');
    await sleep(1_500);
    const outageTo = Date.now();
    expect(agent.stats().outbox.pending).toBeGreaterThan(2);
    // At most one heartbeat waits, however long the outage.
    expect(agent.stats().outbox.kinds.heartbeat.replaced).toBeGreaterThan(0);

    proxy.open();
    await waitFor(
      () => agent.connected && agent.stats().outbox.pending === 0,
      15_000,
      'the backlog stored after the outage',
    );

    // Stopped, so the stream and the counters describe the same messages.
    expect(await agent.stop(3_000)).toBe(true);
    const all = await stored(p.id);
    const byId = new Map<string, number>();
    for (const m of all) byId.set(m.msgId, (byId.get(m.msgId) ?? 0) + 1);
    expect([...byId.values()].filter((n) => n > 1)).toEqual([]);
    const stats = agent.stats().outbox;
    expect(stats.kinds.metrics.duplicates + stats.kinds.heartbeat.duplicates).toBeGreaterThan(0);
    // Every metric batch collected made it, exactly once — also those collected while the broker was away.
    const metrics = ofKind(all, 'metrics').map((m) => MetricBatch.parse(m.json));
    expect(metrics.length).toBe(stats.kinds.metrics.added - stats.kinds.metrics.dropped);
    expect(metrics.some((b) => Date.parse(b.collected_at) > outageFrom && Date.parse(b.collected_at) < outageTo)).toBe(
      true,
    );
  });
});
