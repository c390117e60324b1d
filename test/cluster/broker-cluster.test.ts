import { jetstream, jetstreamManager, type StreamInfo } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { createUser } from '@nats-io/nkeys';
import { connect, jwtAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../contracts/streams.ts';
import { accountOfCreds, BrokerIssuer, seedFromFile } from '../../platform/broker/issuer.ts';
import { BrokerRevoker } from '../../platform/broker/revoker.ts';
import { ensureConsumer, ensureStreams } from '../../platform/jetstream.ts';
import { Lease } from '../../platform/lease.ts';
import { createLogger } from '../../platform/logger.ts';
import { namespace } from '../../platform/namespace.ts';
import { closeNats, connectNats } from '../../platform/nats.ts';
import { brokerReplicas, setBrokerReplicas } from '../../platform/replicas.ts';
import { NATS_CA, NATS_CREDS, NATS_FILES } from '../support/env.ts';
import { NatsCluster } from '../support/nats-cluster.ts';
import { waitFor } from '../support/processes.ts';

/**
 * The broker as production runs it: three nats-server nodes, routes and clients over TLS, JetStream replicated, the
 * project's operator configuration with the full resolver (test/support/nats-cluster.ts). Timing margins are wide: an
 * R3 leader election took about 8 s on a loaded 2-core machine.
 */

const log = createLogger('silent');
let cluster: NatsCluster;
const opened: NatsConnection[] = [];
const replicasBefore = brokerReplicas();

beforeAll(async () => {
  cluster = await NatsCluster.start(3);
}, 90_000);

afterEach(() => setBrokerReplicas(replicasBefore));

afterAll(async () => {
  for (const nc of opened) await closeNats(nc, log, 2_000);
  await cluster?.close();
});

async function service(url = cluster.urls, name = 'cluster-test'): Promise<NatsConnection> {
  const nc = await connectNats(url, name, log, NATS_CREDS, NATS_CA);
  opened.push(nc);
  // A young cluster answers the JetStream API only once the account is known to the meta leader.
  await waitFor(
    () =>
      jsmOf(nc)
        .then((jsm) => jsm.getAccountInfo())
        .then(
          () => true,
          () => false,
        ),
    60_000,
    'the JetStream API',
    500,
  );
  return nc;
}

/** A manager whose calls may wait out an election (the client's default is 5 s). */
const jsmOf = (nc: NatsConnection): ReturnType<typeof jetstreamManager> =>
  jetstreamManager(nc, { timeout: 20_000, checkAPI: false });

/** Names the step that failed: the client's errors carry no stack (noAsyncTraces). */
async function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** Stream info once it has a leader and `replicas - 1` current followers. */
async function settled(nc: NatsConnection, stream: string, replicas: number, timeoutMs = 60_000): Promise<StreamInfo> {
  const jsm = await jsmOf(nc);
  let info: StreamInfo | undefined;
  await waitFor(
    async () => {
      info = await jsm.streams.info(stream).catch(() => undefined);
      const peers = info?.cluster?.replicas ?? [];
      return !!info?.cluster?.leader && peers.length === replicas - 1 && peers.every((p) => p.current && !p.offline);
    },
    timeoutMs,
    `${stream} to have a leader and ${replicas - 1} current replicas`,
    250,
  );
  return info!;
}

describe('replicas (SVC_NATS_REPLICAS)', () => {
  it('moves an R1 stream, its durable and a KV bucket to three replicas at start-up, and the stream survives its leader', async () => {
    const nc = await service();
    const jsm = await step('manager', () => jsmOf(nc));
    // The cluster is this file's own: the real events stream, as a single server would have left it.
    const spec = streams.SVC_EVENTS;
    // What a single server left behind: the stream at one replica, with messages and a durable on it.
    setBrokerReplicas(1);
    await step('declare R1', () => ensureStreams(nc, [spec]));
    const js = jetstream(nc, { timeout: 20_000 });
    await step('publish', async () => {
      for (let i = 0; i < 100; i++) await js.publish(`svc.evt.cluster.move.${i}`, `m${i}`, { msgID: `move-${i}` });
    });
    await step('durable R1', () =>
      ensureConsumer(nc, spec.name, { durable: 'cluster-move', maxDeliver: 5, ackWaitMs: 30_000 }),
    );
    expect((await settled(nc, spec.name, 1)).config.num_replicas).toBe(1);

    // Start-up with SVC_NATS_REPLICAS=3.
    setBrokerReplicas(3);
    await step('declare R3', () => ensureStreams(nc, [spec]));
    const moved = await settled(nc, spec.name, 3);
    expect(moved.config.num_replicas).toBe(3);
    expect(moved.state.messages).toBe(100);
    const consumer = await step('durable R3', () =>
      ensureConsumer(nc, spec.name, { durable: 'cluster-move', maxDeliver: 5, ackWaitMs: 30_000 }),
    );
    expect(consumer.config.num_replicas).toBe(3);
    // What ensureConsumer returns after the re-election names the leader it waited for; the scale-up's own reply
    // does not yet (runs that skipped the step-down failed here). The leader kill below is the test that matters.
    expect(consumer.cluster?.leader).toBeTruthy();
    await waitFor(
      async () => {
        const c = await jsm.consumers.info(spec.name, 'cluster-move').catch(() => undefined);
        const peers = c?.cluster?.replicas ?? [];
        // Online, not `current`: nats-server 2.9 reports an idle consumer's followers as current only while they
        // have recently heard from the leader, so an idle durable's replicas flicker (a clean-clone run timed out on
        // it). That they hold its state is what the leader kill below proves.
        return !!c?.cluster?.leader && peers.length === 2 && peers.every((p) => !p.offline);
      },
      60_000,
      'the durable to have a leader and 2 online replicas',
      250,
    );
    // A lease bucket made at one replica (its name as Lease makes it: TTL and namespace) is scaled up too.
    const bucket = `svc_leases_60000${namespace() ? `_${namespace()}` : ''}`;
    await step('bucket R1', () => new Kvm(nc).create(bucket, { ttl: 60_000, history: 1, replicas: 1 }));
    expect((await step('bucket info R1', () => jsm.streams.info(`KV_${bucket}`))).config.num_replicas).toBe(1);
    // Its callers retry a lease each tick; right after the move the bucket is electing its new leader.
    const lease = new Lease(nc, 'cluster-move', 60_000, log);
    await waitFor(() => lease.hold(), 60_000, 'the lease in the scaled bucket', 500);
    expect((await step('bucket info R3', () => jsm.streams.info(`KV_${bucket}`))).config.num_replicas).toBe(3);

    // Lose the stream's leader: a new one answers with every message.
    const leader = cluster.indexOf(moved.cluster!.leader!);
    await cluster.kill(leader);
    try {
      const after = await waitForLeader(nc, spec.name, moved.cluster!.leader!);
      expect(after.state.messages).toBe(100);
      // The durable elects its own leader too: its first read after the loss may time out, then succeeds. Without the
      // step-down ensureConsumer asks for after scaling it up, nats-server 2.9 lost it here 2 times in 5 (no leader
      // for minutes) whenever its old single-replica node was the one killed.
      let first: string | undefined;
      await waitFor(
        async () => {
          const c = await js.consumers.get(spec.name, 'cluster-move').catch(() => undefined);
          first = (await c?.next({ expires: 5_000 }).catch(() => null))?.string();
          return first !== undefined;
        },
        60_000,
        'the durable to deliver after the loss',
        500,
      );
      expect(first).toBe('m0');
    } finally {
      cluster.run(leader);
      await cluster.waitHealthy();
    }
  }, 240_000);
});

/** Stream info once a node other than `lost` leads it (the client reconnects to a survivor on its own). */
async function waitForLeader(nc: NatsConnection, stream: string, lost: string): Promise<StreamInfo> {
  const jsm = await jsmOf(nc);
  let info: StreamInfo | undefined;
  await waitFor(
    async () => {
      info = await jsm.streams.info(stream).catch(() => undefined);
      return !!info?.cluster?.leader && info.cluster.leader !== lost;
    },
    60_000,
    `${stream} to elect a new leader`,
    250,
  );
  return info!;
}

describe('revocation across nodes', () => {
  it('revoking an agent through node A disconnects it from node B and B refuses it afterwards', async () => {
    const issuer = await BrokerIssuer.fromFiles(NATS_CREDS, NATS_FILES.issuerKey);
    const kp = createUser();
    const issued = await issuer.agent(`cluster-${Date.now()}`, kp.getPublicKey(), 600);
    const onB = (): Promise<NatsConnection> =>
      connect({
        servers: cluster.url(1),
        tls: { caFile: NATS_CA },
        authenticator: jwtAuthenticator(issued.jwt, kp.getSeed()),
        inboxPrefix: issued.inboxPrefix,
        reconnect: false,
        timeout: 5_000,
      });
    const agent = await onB();
    const closed = agent.closed();

    const system = await connectNats(cluster.url(0), 'cluster-revoker', log, NATS_FILES.systemCreds, NATS_CA);
    opened.push(system);
    const revoker = new BrokerRevoker(system, await accountOfCreds(NATS_CREDS), seedFromFile(NATS_FILES.operatorKey));
    await revoker.revoke([kp.getPublicKey()]);

    let ended = false;
    void closed.then(() => (ended = true));
    await waitFor(() => ended, 15_000, 'node B to disconnect the revoked agent');
    await expect(onB()).rejects.toThrow(/Authorization Violation/);
    // Node C too.
    await expect(
      connect({
        servers: cluster.url(2),
        tls: { caFile: NATS_CA },
        authenticator: jwtAuthenticator(issued.jwt, kp.getSeed()),
        inboxPrefix: issued.inboxPrefix,
        reconnect: false,
        timeout: 5_000,
      }),
    ).rejects.toThrow(/Authorization Violation/);
  }, 60_000);
});
