import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_DURABLE, startStaleSweeper } from '../../actors/fleet/agents/status.ts';
import { AgentDirectory } from '../../actors/fleet/telemetry/consume.ts';
import { streams } from '../../contracts/streams.ts';
import { consumerWatermark } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { wireDurableName } from '../../platform/namespace.ts';
import { sleep } from '../support/processes.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * The stale sweeper judges hosts by the heartbeats the ingest has seen: while the heartbeat durable is behind (a
 * heartbeat stored but not yet handled), its cutoff moves back by that much. Here the durable is this file's own (a
 * namespace of its own, no fleet actors consuming it), with one heartbeat handled and one left pending.
 */

const TIMEOUT_S = 120;
const TELEMETRY = streams.SVC_TELEMETRY.name;
let sys: TestSystem;
const agentId = randomUUID();
const subject = `svc.agent.${agentId}.heartbeat`;

beforeAll(async () => {
  // Identity only: no heartbeat ingest of this namespace takes the messages below.
  sys = await startTestSystem({ SVC_ACTORS: 'identity', SVC_NAMESPACE: `lag${randomUUID().slice(0, 8)}` });
}, 60_000);

afterAll(async () => {
  await sys?.stop();
});

/** Takes the next message of the durable and acks it. */
async function handleOne(durable: string): Promise<void> {
  const consumer = await jetstream(sys.nc).consumers.get(TELEMETRY, durable);
  const m = await consumer.next({ expires: 5_000 });
  expect(m, 'a heartbeat to handle').not.toBeNull();
  await m!.ackAck();
}

describe('the stale sweeper behind a lagging heartbeat ingest', () => {
  it('marks no host offline for the time the ingest is behind, and does once it has caught up', async () => {
    const durable = wireDurableName(HEARTBEAT_DURABLE);
    const jsm = await jetstreamManager(sys.nc);
    await jsm.consumers.add(TELEMETRY, {
      durable_name: durable,
      filter_subject: subject,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
    });
    const js = jetstream(sys.nc);
    await js.publish(subject, '{}');
    await handleOne(durable);
    await js.publish(subject, '{}');
    // The ingest is now behind by the time since the first heartbeat was stored: more than 3 s.
    await sleep(3_500);
    const behindSince = await consumerWatermark(sys.nc, TELEMETRY, HEARTBEAT_DURABLE);
    expect(Date.now() - behindSince!).toBeGreaterThanOrEqual(3_500);

    const clientId = randomUUID();
    const envId = randomUUID();
    const hostId = randomUUID();
    await sys.sql(`INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)`, [
      clientId,
      `Lag ${sys.tag}`,
      `lag-${sys.tag}`,
    ]);
    await sys.sql(`INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)`, [
      envId,
      clientId,
      'Production',
      `env-${sys.tag}`,
    ]);
    // Silent for 2 s past the timeout: stale by the clock, not by what the ingest has seen.
    await sys.sql(
      `INSERT INTO hosts (id, environment_id, client_id, hostname, agent_status, last_seen_at) VALUES (?, ?, ?, ?, 'online', ?)`,
      [hostId, envId, clientId, `lag-${sys.tag}`, new Date(sys.clock.now() - (TIMEOUT_S + 2) * 1000)],
    );
    const status = async (): Promise<string | undefined> =>
      (await sys.sql<{ agent_status: string }>(`SELECT agent_status FROM hosts WHERE id = ?`, [hostId]))[0]
        ?.agent_status;

    const orm = await sys.stores.orm();
    const sweeper = startStaleSweeper({
      nc: sys.nc,
      orm,
      directory: new AgentDirectory(orm),
      clock: sys.clock,
      log: createLogger('silent'),
      staleTimeoutSeconds: TIMEOUT_S,
    });
    // Until nothing more is stale: hosts other test files left online go first (oldest first, 1,000 a sweep).
    const sweepAll = async (): Promise<void> => {
      while ((await sweeper.sweep()) > 0);
    };
    try {
      await sweepAll();
      expect(await status()).toBe('online');
      // Caught up: nothing pending, nothing unacked. The same host is stale now.
      await handleOne(durable);
      expect(await consumerWatermark(sys.nc, TELEMETRY, HEARTBEAT_DURABLE)).toBeGreaterThanOrEqual(Date.now() - 1_000);
      await sweepAll();
      expect(await status()).toBe('offline');
    } finally {
      await sweeper.stop();
      await jsm.consumers.delete(TELEMETRY, durable);
    }
  });

  it('reads a durable that does not exist as caught up', async () => {
    const before = Date.now();
    expect(await consumerWatermark(sys.nc, TELEMETRY, `missing-${randomUUID().slice(0, 8)}`)).toBeGreaterThanOrEqual(
      before,
    );
  });
});
