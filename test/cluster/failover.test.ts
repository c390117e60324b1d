import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollAgent, startAgent, type RunningAgent } from '../../agent/index.ts';
import { createSyntheticCollector } from '../../agent/simulate/synthetic.ts';
import { streams } from '../../contracts/streams.ts';
import { HEARTBEAT_DURABLE } from '../../actors/fleet/agents/status.ts';
import { createLogger } from '../../platform/logger.ts';
import { wireDurableName, wireDurableSubject } from '../../platform/namespace.ts';
import { closeNats, connectNats } from '../../platform/nats.ts';
import { brokerReplicas, setBrokerReplicas } from '../../platform/replicas.ts';
import { api } from '../identity/admin-support.ts';
import { NATS_ADMIN_CREDS, NATS_CA } from '../support/env.ts';
import type { NatsCluster } from '../support/nats-cluster.ts';
import { startClusterSystem } from './cluster-system.ts';
import { capturingServiceLogger } from '../support/log-capture.ts';
import { sleep, waitFor } from '../support/processes.ts';
import type { TestSystem } from '../support/system.ts';

/**
 * Failover on three real TLS nodes at three replicas:
 * - the heartbeat durable's leader changes: after a step-down heartbeat ingest pauses < 5 s; after a kill -9 of its
 *   node it resumes within seconds of the new leader's election (the election itself is the broker's);
 * - the node the gateway and an agent are connected to freezes (SIGSTOP, sockets open, nothing answers) under POST
 *   load: the gateway's connection leaves it within 5 s and the agent's within two heartbeat intervals, and no
 *   acknowledged write is lost.
 * Throughout, no host reads offline: the stale sweeper waits for the heartbeat ingest to catch up.
 */

const log = createLogger('silent');
const TELEMETRY = streams.SVC_TELEMETRY.name;
const HEARTBEATS = wireDurableName(HEARTBEAT_DURABLE);
/** Agents whose heartbeats keep the durable busy (two a second each). */
const BUSY_AGENTS = 6;
/** The frozen node's agent beats at this interval (10 s by default; shorter keeps the test short). */
const FROZEN_AGENT_INTERVAL_MS = 5_000;
const WRITERS = 4;

let cluster: NatsCluster;
let sys: TestSystem;
/** The system's log, kept: the re-pull on a new leader's advisory is read from it. */
const captured = capturingServiceLogger('info');
let root: string;
let baseUrl: string;
let envId: string;
let admin: NatsConnection;
let jsm: JetStreamManager;
/** For polls that must not wait long on a node that is gone. */
let fastJsm: JetStreamManager;
let clockTimer: NodeJS.Timeout;
const agents: RunningAgent[] = [];
const dirs: string[] = [];
const offlineEvents: string[] = [];
const replicasBefore = brokerReplicas();

/**
 * An install token. Right after the leaders were moved (leadersOff) or a node came back, a write can still meet a
 * stream without a settled leader and be answered 503 or 504 for a few seconds: that is asked again, anything else
 * fails at once with the answer.
 */
async function installToken(): Promise<string> {
  const call = api(sys, { token: root });
  let last = '';
  for (const end = Date.now() + 60_000; Date.now() < end; await sleep(1_000)) {
    const res = await call('POST', `/api/v1/environments/${envId}/install-tokens`, {});
    if (res.statusCode === 201) return res.json().data.token as string;
    last = `${res.statusCode}: ${res.body}`;
    if (res.statusCode < 500) break;
    console.log(`[failover] install token refused (${last}); asking again`);
  }
  throw new Error(`no install token: ${last}`);
}

async function newAgent(intervalMs: number, i: number): Promise<RunningAgent> {
  const token = await installToken();
  const stateDir = mkdtempSync(join(tmpdir(), 'failover-agent-'));
  dirs.push(stateDir);
  await enrollAgent({ server: baseUrl, token, stateDir, hostname: `failover-${i}-${sys.tag}` });
  const agent = await startAgent({
    stateDir,
    intervalMs,
    inventoryIntervalMs: 3_600_000,
    collector: createSyntheticCollector(i),
    log,
  });
  agents.push(agent);
  return agent;
}

beforeAll(async () => {
  ({ cluster, sys, root } = await startClusterSystem({ SVC_AGENT_STALE_TIMEOUT_SECONDS: '10' }, { log: captured.log }));
  // The sweeper and last_seen_at run on the system's clock: here it is the wall clock.
  clockTimer = setInterval(() => sys.clock.set(Date.now()), 20);
  await sys.console!.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(sys.console!.server.address() as AddressInfo).port}`;
  const call = api(sys, { token: root });
  const client = await call('POST', '/api/v1/clients', { name: `Failover ${sys.tag}`, slug: `failover-${sys.tag}` });
  envId = (
    await call('POST', `/api/v1/clients/${client.json().data.id}/environments`, {
      name: 'Production',
      slug: 'production',
    })
  ).json().data.id as string;
  for (let i = 0; i < BUSY_AGENTS; i++) await newAgent(500, i);
  await waitFor(() => agents.every((a) => a.connected), 30_000, 'every agent to connect');
  admin = await connectNats(cluster.urls, 'failover-probe', log, NATS_ADMIN_CREDS, NATS_CA);
  jsm = await jetstreamManager(admin, { timeout: 5_000, checkAPI: false });
  fastJsm = await jetstreamManager(admin, { timeout: 500, checkAPI: false });
  const sub = admin.subscribe(wireDurableSubject('svc.evt.fleet.agent_status'));
  void (async () => {
    for await (const m of sub) {
      const e = m.json<{ status?: string; host_id?: string }>();
      // This file's hosts only: the sweeper also marks hosts that earlier test files left online.
      if (e.status === 'offline' && agents.some((a) => a.hostId === e.host_id)) offlineEvents.push(e.host_id!);
    }
  })();
  await waitFor(async () => (await hostsNotOnline()) === 0, 30_000, 'every host online', 200);
}, 240_000);

afterAll(async () => {
  clearInterval(clockTimer);
  for (let i = 0; i < (cluster?.nodes.length ?? 0); i++) cluster.thaw(i);
  for (const a of agents) await a.stop(2_000).catch(() => undefined);
  if (admin) await closeNats(admin, log, 2_000);
  await sys?.stop();
  await cluster?.close();
  setBrokerReplicas(replicasBefore);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Hosts of this file's agents that do not read online now. */
async function hostsNotOnline(): Promise<number> {
  const rows = await sys.sql<{ n: string }>(
    `SELECT count(*) AS n FROM hosts WHERE id = ANY(?::uuid[]) AND agent_status <> 'online'`,
    [`{${agents.map((a) => a.hostId).join(',')}}`],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Watches heartbeat ingest while `during` runs and for `afterMs` after, as the sweeper sees it: the hosts'
 * `last_seen_at`, which each ingested heartbeat moves (the busy agents send several a second). The longest stretch
 * between two successive values of its newest, and of one host's (`host`, when given), and whether any host read
 * offline meanwhile.
 */
async function heartbeatPause(
  during: () => Promise<void>,
  afterMs = 10_000,
  host?: string,
): Promise<{ pauseMs: number; hostGapMs: number; notOnline: number }> {
  let watching = true;
  let notOnline = 0;
  const busy = agents.slice(0, BUSY_AGENTS).map((a) => a.hostId);
  const newest: number[] = [];
  const hostSeen: number[] = [];
  const watcher = (async () => {
    while (watching) {
      const [row] = await sys.sql<{ busy: Date | null; host: Date | null }>(
        `SELECT max(last_seen_at) FILTER (WHERE id = ANY(?::uuid[])) AS busy,
                max(last_seen_at) FILTER (WHERE id = ?::uuid) AS host
           FROM hosts WHERE id = ANY(?::uuid[]) OR id = ?::uuid`,
        [`{${busy.join(',')}}`, host ?? busy[0], `{${busy.join(',')}}`, host ?? busy[0]],
      );
      const push = (xs: number[], d: Date | null | undefined): void => {
        const t = d ? new Date(d).getTime() : undefined;
        if (t !== undefined && t !== xs[xs.length - 1]) xs.push(t);
      };
      push(newest, row?.busy);
      push(hostSeen, row?.host);
      notOnline = Math.max(notOnline, await hostsNotOnline());
      await sleep(100);
    }
  })();
  await sleep(2_000);
  const from = Date.now();
  await during();
  await sleep(afterMs);
  const to = Date.now();
  watching = false;
  await watcher;
  return { pauseMs: longestGap(newest, from, to), hostGapMs: host ? longestGap(hostSeen, from, to) : 0, notOnline };
}

/** The longest time between two successive instants of `times` (with `from` and `to`) within [from, to]. */
function longestGap(times: number[], from: number, to: number): number {
  const before = times.filter((t) => t <= from).pop() ?? from;
  const points = [before, ...times.filter((t) => t > from && t <= to), to];
  let gap = 0;
  for (let i = 1; i < points.length; i++) gap = Math.max(gap, points[i]! - points[i - 1]!);
  return gap;
}

/** The node leading `durable` on `stream`, as the cluster says. */
async function consumerLeader(stream: string, durable: string): Promise<number> {
  let leader: string | undefined;
  await waitFor(
    async () => !!(leader = (await jsm.consumers.info(stream, durable).catch(() => undefined))?.cluster?.leader),
    30_000,
    `a leader for ${durable}`,
    200,
  );
  return cluster.indexOf(leader!);
}

describe('failover on three nodes', () => {
  it('resumes heartbeat ingest within 5 s of a step-down of its durable leader, and no host reads offline', async () => {
    const before = await consumerLeader(TELEMETRY, HEARTBEATS);
    const repulls = (): number =>
      captured.lines.filter(
        (l) => l.msg === 'durable has a new leader; pulling again' && String(l.durable).includes(HEARTBEAT_DURABLE),
      ).length;
    const repulledBefore = repulls();
    const { pauseMs, notOnline } = await heartbeatPause(async () => {
      const res = await admin.request(`$JS.API.CONSUMER.LEADER.STEPDOWN.${TELEMETRY}.${HEARTBEATS}`, '', {
        timeout: 10_000,
      });
      expect(res.json<{ success?: boolean }>().success).toBe(true);
    });
    const after = await consumerLeader(TELEMETRY, HEARTBEATS);
    console.log(
      `[failover] step-down of ${HEARTBEATS}: leader ${cluster.nodes[before]!.name} → ${cluster.nodes[after]!.name}, longest ingest pause ${pauseMs} ms`,
    );
    expect(after).not.toBe(before);
    // Within the 5 s target; what brings it back is the new leader's advisory (the durable pulls again at once), not
    // the client's own fallback (two missed idle heartbeats, then a consumer check) that a loaded machine's timing
    // alone could not tell apart.
    expect(pauseMs).toBeLessThan(5_000);
    expect(repulls()).toBeGreaterThan(repulledBefore);
    expect(notOnline).toBe(0);
    expect(offlineEvents).toEqual([]);
  }, 120_000);

  it('resumes heartbeat ingest as soon as the durable has a new leader after a kill -9 of its leader node, and no host reads offline', async () => {
    const victim = await consumerLeader(TELEMETRY, HEARTBEATS);
    let electedMs = 0;
    const { pauseMs, notOnline } = await heartbeatPause(async () => {
      const killedAt = Date.now();
      await cluster.kill(victim);
      const gone = cluster.nodes[victim]!.name;
      // The cluster's election, which no client setting shortens (nats-server's raft election timeout).
      await waitFor(
        async () => {
          const leader = (await fastJsm.consumers.info(TELEMETRY, HEARTBEATS).catch(() => undefined))?.cluster?.leader;
          return leader !== undefined && leader !== gone;
        },
        30_000,
        'a new leader of the heartbeat durable',
        100,
      );
      electedMs = Date.now() - killedAt;
    });
    console.log(
      `[failover] kill -9 of ${cluster.nodes[victim]!.name} (leader of ${HEARTBEATS}): new leader after ${electedMs} ms, longest ingest pause ${pauseMs} ms`,
    );
    // Consumption resumes with the new leader: at the latest when the pull outstanding at the election expires (5 s,
    // platform/jetstream.ts PULL_TIMING), usually within a second or two; far from the 30-46 s stall of the defaults.
    expect(pauseMs).toBeLessThan(electedMs + 5_500);
    expect(notOnline).toBe(0);
    expect(offlineEvents).toEqual([]);
    cluster.run(victim);
    await cluster.waitHealthy(90_000);
  }, 180_000);

  it('moves the gateway and an agent off a frozen node within seconds, loses no acknowledged write and marks no host offline', async () => {
    const target = cluster.indexOfServer(sys.nc.getServer());
    expect(target).toBeGreaterThanOrEqual(0);
    const name = cluster.nodes[target]!.name;
    await leadersOff(name);
    // An agent on the same node (each start picks a node at random).
    let agent: RunningAgent | undefined;
    for (let i = 0; i < 40 && !agent; i++) {
      const a = await newAgent(FROZEN_AGENT_INTERVAL_MS, 100 + i);
      await waitFor(() => a.connected, 15_000, 'the agent to connect');
      if (cluster.indexOfServer(a.server) === target) agent = a;
      else {
        agents.splice(agents.indexOf(a), 1);
        await a.stop(2_000);
      }
    }
    expect(agent, `an agent connected to ${name}`).toBeDefined();
    await sleep(2 * FROZEN_AGENT_INTERVAL_MS);

    const call = api(sys, { token: root });
    const results: { at: number; status: number; id?: string }[] = [];
    let writing = true;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; writing; i++) {
        const at = Date.now();
        const res = await call('POST', '/api/v1/clients', {
          name: `F${w}-${i} ${randomUUID().slice(0, 8)}`,
          slug: `f${w}-${i}-${randomUUID().slice(0, 8)}`,
        });
        results.push({ at, status: res.statusCode, ...(res.statusCode === 201 ? { id: res.json().data.id } : {}) });
        // A refusal comes back at once; a short pause keeps the writers from spinning on it.
        if (res.statusCode !== 201) await sleep(50);
      }
    });
    const { pauseMs, hostGapMs, notOnline } = await heartbeatPause(
      async () => {
        await sleep(3_000);
        const frozenAt = Date.now();
        cluster.freeze(target);
        // When the gateway's connection and the agent's leave the frozen node.
        let gatewayMovedMs: number | undefined;
        let agentMovedMs: number | undefined;
        const onOther = (server: string | undefined): boolean => {
          const i = cluster.indexOfServer(server);
          return i >= 0 && i !== target;
        };
        while (Date.now() - frozenAt < 20_000) {
          if (gatewayMovedMs === undefined && onOther(sys.nc.getServer())) gatewayMovedMs = Date.now() - frozenAt;
          if (agentMovedMs === undefined && agent!.connected && onOther(agent!.server))
            agentMovedMs = Date.now() - frozenAt;
          await sleep(50);
        }
        cluster.thaw(target);
        writing = false;
        await Promise.all(writers);
        const failed = results.filter((r) => r.status !== 201);
        const lastFailure = Math.max(frozenAt, ...failed.map((r) => r.at));
        console.log(
          `[failover] SIGSTOP of ${name} for 20 s: the gateway's connection moved after ${gatewayMovedMs} ms, the agent's after ${agentMovedMs} ms; ${failed.length} of ${results.length} POSTs failed (statuses ${JSON.stringify(countBy(failed.map((r) => r.status)))}), the last sent ${lastFailure - frozenAt} ms after the freeze`,
        );
        expect(gatewayMovedMs).toBeLessThanOrEqual(5_000);
        expect(agentMovedMs).toBeLessThan(2 * FROZEN_AGENT_INTERVAL_MS);
      },
      5_000,
      agent!.hostId,
    );
    console.log(
      `[failover] frozen node: longest gap between the agent's heartbeats as ingested ${hostGapMs} ms (interval ${FROZEN_AGENT_INTERVAL_MS} ms), longest ingest pause of the busy agents ${pauseMs} ms`,
    );
    // Not asserted: while a node is frozen, nats-server 2.9 keeps its routes up and JetStream's writes and deliveries
    // stall for 10-15 s even with every leader elsewhere (docs/operations.md, Failover timing). What the clients
    // control is asserted above; the sweeper's wait for the ingest is asserted below.
    // Every acknowledged write is there.
    const created = results.flatMap((r) => (r.id ? [r.id] : []));
    expect(created.length).toBeGreaterThan(0);
    const rows = await sys.sql<{ id: string }>(`SELECT id FROM clients WHERE id = ANY(?::uuid[])`, [
      `{${created.join(',')}}`,
    ]);
    expect(rows.length).toBe(created.length);
    expect(notOnline).toBe(0);
    expect(offlineEvents).toEqual([]);
    await cluster.waitHealthy(90_000);
  }, 240_000);
});

/** Steps the meta leader and every stream leader (and the heartbeat durable's) off the node called `name`. */
async function leadersOff(name: string): Promise<void> {
  const stepDown = async (subject: string, leader: () => Promise<string | undefined>): Promise<void> => {
    for (let attempt = 0; attempt < 10 && (await leader()) === name; attempt++) {
      await admin.request(subject, '', { timeout: 10_000 }).catch(() => undefined);
      await waitFor(async () => !!(await leader()), 30_000, `a leader after ${subject}`, 200);
    }
    expect(await leader(), subject).not.toBe(name);
  };
  await stepDown('$JS.API.META.LEADER.STEPDOWN', () => cluster.metaLeader());
  for await (const s of jsm.streams.list()) {
    const stream = s.config.name;
    await stepDown(
      `$JS.API.STREAM.LEADER.STEPDOWN.${stream}`,
      async () => (await jsm.streams.info(stream).catch(() => undefined))?.cluster?.leader,
    );
  }
  await stepDown(
    `$JS.API.CONSUMER.LEADER.STEPDOWN.${TELEMETRY}.${HEARTBEATS}`,
    async () => (await jsm.consumers.info(TELEMETRY, HEARTBEATS).catch(() => undefined))?.cluster?.leader,
  );
}

function countBy(xs: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
