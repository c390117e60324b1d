import type { NatsConnection } from '@nats-io/transport-node';
import { MetricBatchIngest, RESERVED_LABELS, type MetricBatch } from '../../../contracts/domains/agent-telemetry.ts';
import { NonRetryableError, type ConsumerHandle } from '../../runtime/jetstream.ts';
import type { Logger } from '../../runtime/logger.ts';
import { TsdbError, type ImportSeries, type Tsdb } from '../../runtime/stores/tsdb.ts';
import { runTelemetryConsumer, type AgentDirectory, type AgentRef } from '../telemetry/consume.ts';
import { ImportBatcher } from './batcher.ts';

/** The durable consumer's name (namespaced on the wire); its dead letters go to svc.dlq.<name>. */
export const METRICS_DURABLE = 'fleet-telemetry-metrics';

/**
 * Sized for ~1,000 agents each sending a batch every 10 s (≈100 batches/s of 50-300 samples): a flush every 200 ms
 * carries ~20 batches, so 128 messages in hand cover a slow import several times over; 20,000 samples keep one
 * import body at a few MB.
 */
export const METRICS_INGEST_DEFAULTS = {
  concurrency: 128,
  flushDelayMs: 200,
  flushMaxSamples: 20_000,
  maxConcurrentImports: 4,
  /**
   * A VictoriaMetrics outage of up to ~56 minutes (1+2+5+10+30 s, then every 60 s) is ridden out; only then is a batch
   * dead-lettered (reason `failed`, replayable from SVC_DLQ). Malformed batches and unknown agents are dead-lettered
   * at once whatever these say.
   */
  maxDeliver: 60,
  backoffMs: [1_000, 2_000, 5_000, 10_000, 30_000, 60_000],
} as const;

export type MetricsIngestTuning = { -readonly [K in keyof typeof METRICS_INGEST_DEFAULTS]: K extends 'backoffMs' ? readonly number[] : number };

const SERVER_SET = new Set<string>(RESERVED_LABELS);

/**
 * Import rows of one batch: one row per series (name plus the sample's own labels), with the sender's host,
 * environment and client as labels. These are the host's placement at ingest time: a host moved or deleted later
 * keeps its history under the labels it had then.
 */
export function batchToSeries(agent: AgentRef, batch: MetricBatch): ImportSeries[] {
  return batchToImportRows(agent, batch).map(({ line: _line, ...row }) => row);
}

/**
 * batchToSeries' rows, each with its import line (ImportSeries.line) as the ingest sends them, built by string
 * concatenation: names and label names are [a-zA-Z0-9_:] (the schema refuses others), so only label values need
 * JSON quoting.
 */
export function batchToImportRows(agent: AgentRef, batch: MetricBatch): ImportSeries[] {
  const collectedAt = Date.parse(batch.collected_at);
  const tenant = `,"host_id":${JSON.stringify(agent.host_id)},"environment_id":${JSON.stringify(agent.environment_id)},"client_id":${JSON.stringify(agent.client_id)}}`;
  // Keyed by the line's label part (`"__name__":"x","a":"b"`, labels sorted): one string both groups and serializes.
  const bySeries = new Map<string, ImportSeries>();
  for (const s of batch.samples) {
    const labels = s.labels;
    let names = Object.keys(labels);
    if (names.length > 1) names = names.sort();
    let key = `"__name__":"${s.name}"`;
    // The schema already refuses samples carrying server labels; skipping them keeps that true if it ever loosens.
    for (const n of names) if (!SERVER_SET.has(n)) key += `,"${n}":${JSON.stringify(labels[n])}`;
    let row = bySeries.get(key);
    if (!row) {
      const metric: ImportSeries['metric'] = { __name__: s.name };
      for (const n of names) if (!SERVER_SET.has(n)) metric[n] = labels[n]!;
      metric.host_id = agent.host_id;
      metric.environment_id = agent.environment_id;
      metric.client_id = agent.client_id;
      row = { metric, values: [], timestamps: [] };
      bySeries.set(key, row);
    }
    row.values.push(s.value);
    row.timestamps.push(s.time_ms ?? collectedAt);
  }
  const rows: ImportSeries[] = [];
  // Numbers print the same through join (String) as through JSON.stringify; the schema admits finite values only.
  for (const [key, r] of bySeries) {
    r.line = `{"metric":{${key}${tenant},"values":[${r.values.join(',')}],"timestamps":[${r.timestamps.join(',')}]}`;
    rows.push(r);
  }
  return rows;
}

/** VictoriaMetrics rejected the content (a 4xx other than timeout/throttling): sending it again cannot help. */
export function isTsdbRefusal(err: unknown): boolean {
  return err instanceof TsdbError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}

export interface MetricsIngestDeps {
  nc: NatsConnection;
  directory: AgentDirectory;
  tsdb: Pick<Tsdb, 'importSeries'>;
  log: Logger;
  tuning?: Partial<MetricsIngestTuning>;
  /** Default METRICS_DURABLE; another name runs a second, independent consumer (tests inject store faults). */
  durable?: string;
}

/**
 * The metrics ingest: consumes `svc.agent.*.metrics`, and hands the samples of concurrently handled batches to
 * VictoriaMetrics in shared imports. A message is acknowledged only after the import carrying its samples
 * succeeded; a failed import makes each of its messages retry with backoff. Redelivery cannot double a sample:
 * VictoriaMetrics runs with -dedup.minScrapeInterval=1ms, so equal series and timestamp collapse to one sample.
 */
export async function startMetricsIngest(deps: MetricsIngestDeps): Promise<ConsumerHandle> {
  const t: MetricsIngestTuning = { ...METRICS_INGEST_DEFAULTS, ...deps.tuning };
  const log = deps.log.child({ actor: 'fleet-metrics-ingest' });
  const batcher = new ImportBatcher({
    write: (rows) => deps.tsdb.importSeries(rows),
    maxDelayMs: t.flushDelayMs,
    maxSamples: t.flushMaxSamples,
    maxConcurrentWrites: t.maxConcurrentImports,
    isRefusal: isTsdbRefusal,
  });
  const consumer = await runTelemetryConsumer({
    nc: deps.nc,
    directory: deps.directory,
    kind: 'metrics',
    durable: deps.durable ?? METRICS_DURABLE,
    schema: MetricBatchIngest,
    concurrency: t.concurrency,
    maxDeliver: t.maxDeliver,
    backoffMs: t.backoffMs,
    log,
    handler: async (agent, batch, meta) => {
      const rows = batchToImportRows(agent, batch);
      try {
        await batcher.add(rows);
      } catch (err) {
        if (isTsdbRefusal(err)) throw new NonRetryableError(`VictoriaMetrics refused the batch: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        throw err;
      }
      meta.log.debug({ host_id: agent.host_id, samples: batch.samples.length, series: rows.length }, 'metric batch stored');
    },
  });
  return {
    durable: consumer.durable,
    stop: async () => {
      // In-flight handlers wait for their imports, which the batcher still runs; then nothing is left to flush.
      await consumer.stop();
      await batcher.close();
    },
  };
}
