import type { NatsConnection } from '@nats-io/transport-node';
import { RESERVED_LABELS, type MetricBatch } from '../../../contracts/domains/agent-telemetry.ts';
import {
  CompactMetricBatch,
  MetricBatchWire,
  StringTableMemo,
  decodeMetricPayload,
} from '../../../contracts/domains/metric-wire.ts';
import { NonRetryableError, type ConsumerHandle } from '../../../platform/jetstream.ts';
import type { Logger } from '../../../platform/logger.ts';
import { TsdbError, type ImportSeries, type Tsdb } from './tsdb.ts';
import { runTelemetryConsumer, type AgentDirectory, type AgentRef } from '../telemetry/consume.ts';
import { ImportBatcher } from './batcher.ts';
import { compactLinesSize, quoteLabelValue, tenantBytes, tenantText, writeCompactLines } from './compact-lines.ts';

/** The durable consumer's name (namespaced on the wire); its dead letters go to svc.dlq.<name>. */
export const METRICS_DURABLE = 'fleet-telemetry-metrics';

/**
 * Sized for ~1,000 agents each sending a batch every 10 s (≈100 batches/s of 50-300 samples), and for a backlog
 * (agents' outboxes replayed after an outage) at the store's speed. 20,000 samples keep one import body at a few MB.
 * The messages in hand must cover the imports running plus the one filling: 4 × 20,000 + 20,000 samples are ~330
 * batches of 300, hence 512 (with 128, a backlog ran with fewer than two imports at a time); each waits as one flat
 * string of its import lines (~75 KB at 300 samples). A flush waits at most 50 ms for company: at 100 batches/s it
 * still carries ~5 batches (20 imports/s, nothing to the store), and the end of a burst is not held back 200 ms.
 */
export const METRICS_INGEST_DEFAULTS = {
  concurrency: 512,
  flushDelayMs: 50,
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

export type MetricsIngestTuning = {
  -readonly [K in keyof typeof METRICS_INGEST_DEFAULTS]: K extends 'backoffMs' ? readonly number[] : number;
};

const SERVER_SET = new Set<string>(RESERVED_LABELS);

/**
 * One batch waiting for its import: the samples it holds, and its /api/v1/import lines (JSON, each ending in a
 * newline, UTF-8), written when the import is sent into that import's buffer. A compact batch is kept decoded until
 * then: writing each batch's lines into bytes of its own on arrival allocated ~60 MB a second outside V8's heap at
 * the bench's rate, and that external memory was what set off most of the consumer's collections.
 */
export interface ImportChunk {
  readonly samples: number;
  /** The most bytes its lines take. */
  readonly maxBytes: number;
  /** Writes the lines at `at` of `into` (with maxBytes of room there); returns where they end. */
  writeTo(into: Buffer, at: number): number;
}

/** A JSON batch's lines are built on arrival (their string is the work) and copied into the import. */
class BytesChunk implements ImportChunk {
  private readonly body: Buffer;
  readonly samples: number;
  constructor(body: Buffer, samples: number) {
    this.body = body;
    this.samples = samples;
  }
  get maxBytes(): number {
    return this.body.length;
  }
  writeTo(into: Buffer, at: number): number {
    return at + this.body.copy(into, at);
  }
}

class CompactChunk implements ImportChunk {
  readonly maxBytes: number;
  private readonly batch: CompactMetricBatch;
  private readonly tenant: Uint8Array;
  constructor(batch: CompactMetricBatch, tenant: Uint8Array) {
    this.batch = batch;
    this.tenant = tenant;
    this.maxBytes = compactLinesSize(batch, tenant);
  }
  get samples(): number {
    return this.batch.size;
  }
  writeTo(into: Buffer, at: number): number {
    return writeCompactLines(this.batch, this.tenant, into, at);
  }
}

/** A batch as it waits for its import. */
export function batchToChunk(agent: AgentRef, batch: MetricBatch | CompactMetricBatch): ImportChunk {
  if (batch instanceof CompactMetricBatch)
    return new CompactChunk(batch, tenantBytes(agent.host_id, agent.environment_id, agent.client_id));
  return new BytesChunk(jsonBatchLines(agent, batch), batch.samples.length);
}

/** Chunks' lines one after the other in `into` (which must have room for their maxBytes); the bytes written. */
export function writeChunks(chunks: readonly ImportChunk[], into: Buffer): Buffer {
  let at = 0;
  for (const c of chunks) at = c.writeTo(into, at);
  return into.subarray(0, at);
}

const chunksBytes = (chunks: readonly ImportChunk[]): number => chunks.reduce((n, c) => n + c.maxBytes, 0);

/** A batch's import lines as bytes of their own, and the samples they hold. */
export function batchToImport(
  agent: AgentRef,
  batch: MetricBatch | CompactMetricBatch,
): { body: Buffer; samples: number } {
  const chunk = batchToChunk(agent, batch);
  return { body: writeChunks([chunk], Buffer.allocUnsafe(chunk.maxBytes)), samples: chunk.samples };
}

/**
 * The buffers imports are written into, used again from import to import (as many as imports run at once): in the
 * steady state the ingest allocates no memory for its imports' bytes. One larger than `keepMax` is not kept.
 */
export class ImportBuffers {
  private readonly free: Buffer[] = [];
  private readonly keep: number;
  private readonly keepMax: number;
  private readonly minSize: number;
  constructor(keep: number, keepMax = 32 * 1024 * 1024, minSize = 8 * 1024 * 1024) {
    this.keep = keep;
    this.keepMax = keepMax;
    this.minSize = minSize;
  }
  take(bytes: number): Buffer {
    const at = this.free.findIndex((b) => b.length >= bytes);
    if (at >= 0) return this.free.splice(at, 1)[0]!;
    return Buffer.allocUnsafeSlow(Math.max(bytes, this.minSize));
  }
  give(buf: Buffer): void {
    if (buf.length <= this.keepMax && this.free.length < this.keep) this.free.push(buf);
  }
  get kept(): number {
    return this.free.length;
  }
}

/**
 * A batch's import lines: one line per sample (name, the sample's own labels, and the sender's host, environment and
 * client as labels). These are the host's placement at ingest time: a host moved or deleted later keeps its history
 * under the labels it had then.
 *
 * The hot path of the ingest, written by string concatenation: names and label names are [a-zA-Z0-9_:] (the schema
 * refuses others), so only label values need JSON quoting (plain ones are quoted as they are), and numbers print the
 * same through String as through JSON.stringify (the schema admits finite values only). Samples carry 0-2 labels as
 * a rule, ordered without a sort call. Samples of one series are not grouped into one line: the store keeps the same
 * samples either way, and grouping needed each line's labels as a flat string key, whose building and hashing cost
 * far more than grouping saves (an agent's batch rarely holds a series twice). The lines are encoded at once.
 */
function jsonBatchLines(agent: AgentRef, batch: MetricBatch): Buffer {
  const collectedAt = Date.parse(batch.collected_at);
  const tenant = tenantText(agent.host_id, agent.environment_id, agent.client_id);
  let out = '';
  for (const s of batch.samples) {
    const labels = s.labels;
    const names = Object.keys(labels);
    let line = '{"metric":{"__name__":"' + s.name + '"';
    // The schema already refuses samples carrying server labels; skipping them keeps that true if it ever loosens.
    if (names.length === 1) {
      const a = names[0]!;
      if (!SERVER_SET.has(a)) line += ',"' + a + '":' + quoteLabelValue(labels[a]!);
    } else if (names.length === 2) {
      let a = names[0]!;
      let b = names[1]!;
      if (b < a) [a, b] = [b, a];
      if (!SERVER_SET.has(a)) line += ',"' + a + '":' + quoteLabelValue(labels[a]!);
      if (!SERVER_SET.has(b)) line += ',"' + b + '":' + quoteLabelValue(labels[b]!);
    } else if (names.length > 2) {
      for (const n of names.sort()) if (!SERVER_SET.has(n)) line += ',"' + n + '":' + quoteLabelValue(labels[n]!);
    }
    out += line + tenant + s.value + '],"timestamps":[' + (s.time_ms ?? collectedAt) + ']}\n';
  }
  return Buffer.from(out, 'utf8');
}

/** Import lines back as rows (for a store without importLines, and to look at what a batch becomes). */
export function linesToSeries(body: string): ImportSeries[] {
  return body
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as ImportSeries);
}

/** The rows of a batch's import lines (batchToImport). */
export function batchToSeries(agent: AgentRef, batch: MetricBatch): ImportSeries[] {
  return linesToSeries(batchToImport(agent, batch).body.toString('utf8'));
}

/** VictoriaMetrics rejected the content (a 4xx other than timeout/throttling): sending it again cannot help. */
export function isTsdbRefusal(err: unknown): boolean {
  return err instanceof TsdbError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}

/**
 * The last string table of each sender (by subject: one per agent), within a count and a memory budget: the least
 * recently heard-from go first. A reference agent's table is a few KB (~60 strings); the budget bounds what senders
 * with huge tables could pin.
 */
export class SenderTables {
  private readonly memos = new Map<string, { memo: StringTableMemo; weight: number }>();
  private total = 0;
  private readonly maxSenders: number;
  private readonly budgetBytes: number;
  constructor(opts: { maxSenders?: number; budgetBytes?: number } = {}) {
    this.maxSenders = opts.maxSenders ?? 20_000;
    this.budgetBytes = opts.budgetBytes ?? 64 * 1024 * 1024;
  }
  of(subject: string): StringTableMemo {
    const entry = this.memos.get(subject);
    if (entry) {
      this.memos.delete(subject);
      this.memos.set(subject, entry);
      return entry.memo;
    }
    const memo = new StringTableMemo();
    this.memos.set(subject, { memo, weight: 0 });
    this.evict();
    return memo;
  }
  /** After a decode with the sender's memo: what it now holds counts toward the budget. */
  account(subject: string): void {
    const entry = this.memos.get(subject);
    if (!entry) return;
    // The table's bytes, and per string its text, its check flags and its encoded pieces (roughly).
    const weight = (entry.memo.bytes?.length ?? 0) + entry.memo.strings.length * 96;
    this.total += weight - entry.weight;
    entry.weight = weight;
    this.evict();
  }
  private evict(): void {
    while (this.memos.size > 1 && (this.memos.size > this.maxSenders || this.total > this.budgetBytes)) {
      const [oldest, entry] = this.memos.entries().next().value!;
      this.memos.delete(oldest);
      this.total -= entry.weight;
    }
  }
  get size(): number {
    return this.memos.size;
  }
  get bytes(): number {
    return this.total;
  }
}

export interface MetricsIngestDeps {
  nc: NatsConnection;
  directory: AgentDirectory;
  /** importLines when the store has it (Tsdb does); a store with importSeries only (a test double) gets the same lines as rows. */
  tsdb: Pick<Tsdb, 'importSeries'> & Partial<Pick<Tsdb, 'importLines'>>;
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
  const store = deps.tsdb;
  const tables = new SenderTables();
  // One per import running, plus one for an import split after a refusal.
  const buffers = new ImportBuffers(t.maxConcurrentImports + 1);
  const batcher = new ImportBatcher<ImportChunk>({
    // The batches' lines are written straight into a buffer of the import's own, used again by the next import.
    write: async (chunks) => {
      const buf = buffers.take(chunksBytes(chunks));
      try {
        const body = writeChunks(chunks, buf);
        // importLines settles only once the body is no longer being sent, so the buffer can be written again.
        await (store.importLines ? store.importLines(body) : store.importSeries(linesToSeries(body.toString('utf8'))));
      } finally {
        buffers.give(buf);
      }
    },
    samplesOf: (chunk) => chunk.samples,
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
    schema: MetricBatchWire,
    decode: (data, subject) => {
      try {
        return decodeMetricPayload(data, tables.of(subject));
      } finally {
        tables.account(subject);
      }
    },
    concurrency: t.concurrency,
    maxDeliver: t.maxDeliver,
    backoffMs: t.backoffMs,
    log,
    handler: async (agent, batch, meta) => {
      const chunk = batchToChunk(agent, batch);
      try {
        await batcher.add([chunk]);
      } catch (err) {
        if (isTsdbRefusal(err))
          throw new NonRetryableError(
            `VictoriaMetrics refused the batch: ${err instanceof Error ? err.message : String(err)}`,
            { cause: err },
          );
        throw err;
      }
      meta.log.debug({ host_id: agent.host_id, samples: chunk.samples }, 'metric batch stored');
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
