import { jetstream, jetstreamManager, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRICS_DURABLE, startMetricsIngest } from '../../actors/fleet/metrics/ingest.ts';
import { AgentDirectory, type AgentRef } from '../../actors/fleet/telemetry/consume.ts';
import type { ConsumerHandle } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { wireDurableName } from '../../platform/namespace.ts';
import { Tsdb, TsdbError, type ImportSeries } from '../../actors/fleet/metrics/tsdb.ts';
import type { MetricBatchIn } from '../../contracts/domains/agent-telemetry.ts';
import { encodeCompactMetricBatch } from '../../contracts/domains/metric-wire.ts';
import { DlqHeaders, dlqSubjectFor, streams, telemetrySubject } from '../../contracts/streams.ts';
import { NATS_ADMIN_CREDS, NATS_CA, NATS_URL } from '../support/env.ts';
import { waitFor } from '../support/processes.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

const TELEMETRY = streams.SVC_TELEMETRY.name;
const encoder = new TextEncoder();

let sys: TestSystem;
/** Our own connection: publishing as a service, and clean-up after the system (and its connection) stopped. */
let nc: NatsConnection;
let jsm: JetStreamManager;
let tsdb: Tsdb;
const clients: string[] = [];
const hosts: string[] = [];
const durables = new Set<string>([wireDurableName(METRICS_DURABLE)]);
const extraConsumers: ConsumerHandle[] = [];

beforeAll(async () => {
  sys = await startTestSystem({ SVC_ACTORS: 'fleet', SVC_GATEWAYS: 'none' });
  nc = await connectNats(NATS_URL, 'metrics-ingest-test', createLogger('silent'), NATS_ADMIN_CREDS, NATS_CA);
  jsm = await jetstreamManager(nc);
  tsdb = new Tsdb(sys.config.SVC_TSDB_URL);
});

afterAll(async () => {
  for (const id of clients) await sys?.sql('DELETE FROM clients WHERE id = ?', [id]);
  // Consumers first (each finishes its imports), then their durables, dead letters and series.
  await Promise.allSettled(extraConsumers.map((c) => c.stop()));
  await sys?.stop();
  for (const d of durables) {
    await jsm?.consumers.delete(TELEMETRY, d).catch(() => undefined);
    await jsm?.streams.purge(streams.SVC_DLQ.name, { filter: dlqSubjectFor(d) });
  }
  // Flushed first: a deletion does not reach samples still buffered in memory.
  await tsdb?.flush();
  if (hosts.length > 0) await tsdb?.deleteSeries([`{host_id=~"${hosts.join('|')}"}`]);
  await nc?.drain();
});

/** A client, environment, host and agent of this run, inserted straight into the tables enrolment fills. */
async function enrolAgent(status: 'active' | 'revoked' = 'active'): Promise<AgentRef> {
  const ref: AgentRef = {
    agent_id: randomUUID(),
    host_id: randomUUID(),
    environment_id: randomUUID(),
    client_id: randomUUID(),
  };
  clients.push(ref.client_id);
  hosts.push(ref.host_id);
  await sys.sql('INSERT INTO clients (id, name, slug) VALUES (?, ?, ?)', [
    ref.client_id,
    'Metrics client',
    `m-${ref.client_id}`,
  ]);
  await sys.sql('INSERT INTO environments (id, client_id, name, slug) VALUES (?, ?, ?, ?)', [
    ref.environment_id,
    ref.client_id,
    'Prod',
    'prod',
  ]);
  await sys.sql(
    `INSERT INTO agents (id, client_id, environment_id, host_id, public_key, status, hostname) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [ref.agent_id, ref.client_id, ref.environment_id, ref.host_id, `key-${ref.agent_id}`, status, 'web-1'],
  );
  await sys.sql('INSERT INTO hosts (id, environment_id, client_id, agent_id, hostname) VALUES (?, ?, ?, ?, ?)', [
    ref.host_id,
    ref.environment_id,
    ref.client_id,
    ref.agent_id,
    'web-1',
  ]);
  return ref;
}

/** Publishes on the agent's own telemetry subject, as the agent would; resolves to the stream sequence. */
async function publish(agentId: string, batch: MetricBatchIn | Record<string, unknown>): Promise<number> {
  const ack = await jetstream(nc).publish(telemetrySubject(agentId, 'metrics'), encoder.encode(JSON.stringify(batch)));
  return ack.seq;
}

/** Waits until `durable` has settled (acked or dead-lettered) everything up to stream sequence `seq`. */
async function settled(seq: number, durable = wireDurableName(METRICS_DURABLE), timeoutMs = 15_000): Promise<void> {
  await waitFor(
    async () => (await jsm.consumers.info(TELEMETRY, durable)).ack_floor.stream_seq >= seq,
    timeoutMs,
    `${durable} settled up to ${seq}`,
    50,
  );
}

/** Every stored series of one host, sorted by name and labels; forces VictoriaMetrics to make recent imports searchable. */
async function seriesOf(hostId: string): Promise<ImportSeries[]> {
  await tsdb.flush();
  const rows = await tsdb.export([`{host_id="${hostId}"}`], { start: 0 });
  return rows.sort((a, b) => JSON.stringify(a.metric).localeCompare(JSON.stringify(b.metric)));
}

/** Dead letters of `durable` that came from `agentId`'s metrics subject. */
async function deadLetters(agentId: string, durable = wireDurableName(METRICS_DURABLE)): Promise<JsMsg[]> {
  const subject = telemetrySubject(agentId, 'metrics');
  const c = await jetstream(nc).consumers.get(streams.SVC_DLQ.name, { filter_subjects: dlqSubjectFor(durable) });
  const out: JsMsg[] = [];
  try {
    const info = await c.info(true);
    if (info.num_pending === 0) return out;
    const batch = await c.fetch({ max_messages: info.num_pending, expires: 2_000 });
    for await (const m of batch) {
      if (m.headers?.get(DlqHeaders.subject) === subject) out.push(m);
      if (m.info.pending === 0) break;
    }
  } finally {
    await c.delete().catch(() => undefined);
  }
  return out;
}

const minuteAgo = (): number => Math.floor(Date.now() / 1000) * 1000 - 60_000;

describe('metrics ingest', () => {
  it('stores a batch as one row per series, labelled with host, environment and client', async () => {
    const agent = await enrolAgent();
    const t = minuteAgo();
    const collectedAt = new Date(t + 5_000).toISOString();
    const seq = await publish(agent.agent_id, {
      collected_at: collectedAt,
      samples: [
        { name: 'node_cpu_seconds_total', value: 10.5, time_ms: t, labels: { cpu: '0', mode: 'user' } },
        { name: 'node_cpu_seconds_total', value: 11.25, time_ms: t + 1_000, labels: { mode: 'user', cpu: '0' } },
        { name: 'node_cpu_seconds_total', value: 3, time_ms: t, labels: { cpu: '1', mode: 'user' } },
        { name: 'node_memory_used_bytes', value: 123456789 },
      ],
    });
    await settled(seq);
    const tenant = { host_id: agent.host_id, environment_id: agent.environment_id, client_id: agent.client_id };
    expect(await seriesOf(agent.host_id)).toEqual([
      {
        metric: { __name__: 'node_cpu_seconds_total', cpu: '0', mode: 'user', ...tenant },
        values: [10.5, 11.25],
        timestamps: [t, t + 1_000],
      },
      {
        metric: { __name__: 'node_cpu_seconds_total', cpu: '1', mode: 'user', ...tenant },
        values: [3],
        timestamps: [t],
      },
      {
        metric: { __name__: 'node_memory_used_bytes', ...tenant },
        values: [123456789],
        timestamps: [Date.parse(collectedAt)],
      },
    ]);
    // Tenant filters select it; another client's filter does not.
    expect(
      await tsdb.series(['node_memory_used_bytes'], 0, undefined, [`{client_id="${agent.client_id}"}`]),
    ).toHaveLength(1);
    expect(
      await tsdb.series([`node_memory_used_bytes{host_id="${agent.host_id}"}`], 0, undefined, [
        `{client_id="${randomUUID()}"}`,
      ]),
    ).toEqual([]);
    expect(await deadLetters(agent.agent_id)).toEqual([]);
  });

  it('stores a batch delivered twice once: one sample per series and timestamp', async () => {
    const agent = await enrolAgent();
    const t = minuteAgo();
    const batch = {
      collected_at: new Date(t).toISOString(),
      samples: [
        { name: 'svc_test_requests_total', value: 1, time_ms: t, labels: { code: '200' } },
        { name: 'svc_test_requests_total', value: 2, time_ms: t + 10_000, labels: { code: '200' } },
        { name: 'svc_test_load', value: 0.5 },
      ],
    };
    await publish(agent.agent_id, batch);
    await settled(await publish(agent.agent_id, batch));
    // And once more after the first copies have been flushed to disk, so the copies sit in different parts.
    await tsdb.flush();
    await settled(await publish(agent.agent_id, batch));
    const stored = await seriesOf(agent.host_id);
    expect(stored.map((s) => [s.metric.__name__, s.values, s.timestamps])).toEqual([
      ['svc_test_load', [0.5], [t]],
      ['svc_test_requests_total', [1, 2], [t, t + 10_000]],
    ]);
  });

  it('dead-letters malformed batches with their reason and goes on with the next good one', async () => {
    const agent = await enrolAgent();
    const t = minuteAgo();
    const good = { name: 'svc_test_ok', value: 1, time_ms: t };
    const bad: Record<string, unknown>[] = [
      { collected_at: new Date(t).toISOString(), samples: [good, { name: 'svc_test_nan', value: 'NaN', time_ms: t }] },
      {
        collected_at: new Date(t).toISOString(),
        samples: [good, { name: 'svc_test_tenant', value: 1, labels: { client_id: randomUUID() } }],
      },
      { collected_at: new Date(t).toISOString(), samples: [good, { name: '1bad-name', value: 1 }] },
      { collected_at: 'yesterday', samples: [good] },
      { collected_at: new Date(t).toISOString(), samples: [] },
    ];
    for (const b of bad) await publish(agent.agent_id, b);
    await settled(
      await publish(agent.agent_id, {
        collected_at: new Date(t).toISOString(),
        samples: [{ name: 'svc_test_after', value: 7, time_ms: t + 1 }],
      }),
    );

    const letters = await deadLetters(agent.agent_id);
    expect(letters).toHaveLength(bad.length);
    expect(letters.map((m) => m.headers?.get(DlqHeaders.reason))).toEqual(bad.map(() => 'malformed'));
    const errors = letters.map((m) => m.headers?.get(DlqHeaders.error) ?? '');
    expect(errors[1]).toContain('set by the server');
    expect(errors[2]).toContain('metric names');
    // Nothing of a refused batch is stored, not even its good samples; the batch after them is.
    expect((await seriesOf(agent.host_id)).map((s) => [s.metric.__name__, s.values])).toEqual([
      ['svc_test_after', [7]],
    ]);
  });

  it("stores a compact batch (the reference agent's form) as it stores the same batch in JSON", async () => {
    const viaJson = await enrolAgent();
    const viaCompact = await enrolAgent();
    const t = minuteAgo();
    const batch: MetricBatchIn = {
      collected_at: new Date(t).toISOString(),
      samples: [
        { name: 'process_cpu_usage', value: 12.5, labels: { process_name: 'postgres: writer', pid: '812' } },
        { name: 'process_cpu_usage', value: 3, labels: { pid: '1', process_name: 'systemd' } },
        {
          name: 'filesystem_used_bytes',
          value: 53687091200,
          labels: { mountpoint: '/', device: '/dev/sda1', fstype: 'ext4' },
        },
        { name: 'net_receive_bytes_total', value: 1e15, time_ms: t - 10_000, labels: { interface: 'eth0' } },
        { name: 'net_receive_bytes_total', value: 1.5e15, labels: { interface: 'eth0' } },
        { name: 'weird', value: -0.25, labels: { note: 'quote " backslash \\ zürich ✓' } },
      ],
    };
    await publish(viaJson.agent_id, batch);
    const ack = await jetstream(nc).publish(
      telemetrySubject(viaCompact.agent_id, 'metrics'),
      encodeCompactMetricBatch(batch),
    );
    await settled(ack.seq);
    const strip = (rows: ImportSeries[], a: AgentRef): ImportSeries[] => {
      for (const r of rows)
        expect(r.metric).toMatchObject({
          host_id: a.host_id,
          environment_id: a.environment_id,
          client_id: a.client_id,
        });
      return rows.map((r) => ({ ...r, metric: { ...r.metric, host_id: '', environment_id: '', client_id: '' } }));
    };
    const stored = strip(await seriesOf(viaCompact.host_id), viaCompact);
    expect(stored).toHaveLength(5);
    expect(stored).toEqual(strip(await seriesOf(viaJson.host_id), viaJson));
    expect(stored.find((r) => r.metric.__name__ === 'weird')?.metric.note).toBe('quote " backslash \\ zürich ✓');
    expect(stored.find((r) => r.metric.__name__ === 'net_receive_bytes_total')).toMatchObject({
      values: [1e15, 1.5e15],
      timestamps: [t - 10_000, t],
    });
    expect(await deadLetters(viaCompact.agent_id)).toEqual([]);
  });

  it('dead-letters malformed compact batches as malformed, with the place named, and goes on', async () => {
    const agent = await enrolAgent();
    const t = minuteAgo();
    const good = encodeCompactMetricBatch({
      collected_at: new Date(t).toISOString(),
      samples: [{ name: 'svc_test_ok', value: 1, labels: { a: 'b' } }],
    });
    const version = Uint8Array.from(good);
    version[3] = 9;
    const tenant = encodeCompactMetricBatch({
      collected_at: new Date(t).toISOString(),
      samples: [{ name: 'svc_test_x', value: 1, labels: { client_id: randomUUID() } }],
    });
    const bad = [good.subarray(0, good.length - 3), Uint8Array.from([...good, 7]), version, tenant];
    for (const b of bad) await jetstream(nc).publish(telemetrySubject(agent.agent_id, 'metrics'), b);
    const after = encodeCompactMetricBatch({
      collected_at: new Date(t).toISOString(),
      samples: [{ name: 'svc_test_after', value: 7 }],
    });
    await settled((await jetstream(nc).publish(telemetrySubject(agent.agent_id, 'metrics'), after)).seq);

    const letters = await deadLetters(agent.agent_id);
    expect(letters.map((m) => m.headers?.get(DlqHeaders.reason))).toEqual(bad.map(() => 'malformed'));
    expect(letters.map((m) => m.headers?.get(DlqHeaders.error))).toEqual([
      'truncated in the samples',
      '1 bytes after the last sample',
      'compact metric batch version 9 is not supported (expected 1)',
      'sample 0: labels host_id, environment_id, client_id, agent_id, __name__ are set by the server',
    ]);
    // The dead letter keeps the bytes as sent, so a replay after a fix reads them again.
    expect(Buffer.from(letters[1]!.data).equals(Buffer.from([...good, 7]))).toBe(true);
    expect((await seriesOf(agent.host_id)).map((s) => [s.metric.__name__, s.values])).toEqual([
      ['svc_test_after', [7]],
    ]);
  });

  it('dead-letters batches of unknown and revoked agents', async () => {
    const revoked = await enrolAgent('revoked');
    const unknown = randomUUID();
    const t = minuteAgo();
    const batch = { collected_at: new Date(t).toISOString(), samples: [{ name: 'svc_test_orphan', value: 1 }] };
    await publish(unknown, batch);
    await settled(await publish(revoked.agent_id, batch));
    for (const id of [unknown, revoked.agent_id]) {
      const [letter, ...more] = await deadLetters(id);
      expect(more).toEqual([]);
      expect(letter?.headers?.get(DlqHeaders.reason)).toBe('rejected');
      expect(letter?.headers?.get(DlqHeaders.error)).toContain(`unknown or revoked agent ${id}`);
    }
    expect(await seriesOf(revoked.host_id)).toEqual([]);
  });

  it('retries the batches of a failed import until the store takes them, and dead-letters only what it refuses', async () => {
    // A second consumer of the same subjects in front of a store that fails on demand (the system's own consumer
    // stores the same samples too: deduplication keeps one copy).
    const durable = `${METRICS_DURABLE}-faults`;
    durables.add(wireDurableName(durable));
    let outage = 1;
    const seen: string[] = [];
    const flaky = {
      importSeries: async (rows: readonly ImportSeries[]): Promise<void> => {
        seen.push(...rows.map((r) => `${r.metric.host_id}:${r.metric.__name__}`));
        if (outage > 0) {
          outage--;
          throw new TsdbError('tsdb /api/v1/import: connect ECONNREFUSED', 0, '');
        }
        if (rows.some((r) => r.metric.__name__ === 'svc_test_refused'))
          throw new TsdbError('tsdb /api/v1/import: HTTP 400: bad row', 400, 'bad row');
        await tsdb.importSeries(rows);
      },
    };
    const consumer = await startMetricsIngest({
      nc,
      directory: new AgentDirectory(await sys.stores.orm()),
      tsdb: flaky,
      log: createLogger('silent'),
      durable,
      tuning: { flushDelayMs: 300, maxDeliver: 4, backoffMs: [100] },
    });
    extraConsumers.push(consumer);

    const a = await enrolAgent();
    const b = await enrolAgent();
    const t = minuteAgo();
    // Published together so they share the failing import.
    await Promise.all([
      publish(a.agent_id, {
        collected_at: new Date(t).toISOString(),
        samples: [{ name: 'svc_test_retried', value: 1, time_ms: t }],
      }),
      publish(b.agent_id, {
        collected_at: new Date(t).toISOString(),
        samples: [{ name: 'svc_test_retried', value: 2, time_ms: t }],
      }),
    ]);
    await waitFor(
      () => seen.filter((s) => s.endsWith(':svc_test_retried')).length >= 4,
      10_000,
      'both batches imported again after the failed import',
    );
    await settled(
      await publish(b.agent_id, {
        collected_at: new Date(t).toISOString(),
        samples: [{ name: 'svc_test_refused', value: 1 }],
      }),
      wireDurableName(durable),
    );

    for (const ref of [a, b]) expect(seen.filter((s) => s === `${ref.host_id}:svc_test_retried`)).toHaveLength(2);
    expect((await seriesOf(a.host_id)).map((s) => [s.metric.__name__, s.values, s.timestamps])).toEqual([
      ['svc_test_retried', [1], [t]],
    ]);
    expect(await deadLetters(a.agent_id, wireDurableName(durable))).toEqual([]);
    const [refused, ...more] = await deadLetters(b.agent_id, wireDurableName(durable));
    expect(more).toEqual([]);
    expect(refused?.headers?.get(DlqHeaders.reason)).toBe('rejected');
    expect(refused?.headers?.get(DlqHeaders.error)).toContain('VictoriaMetrics refused the batch');
  });
});
