import { describe, expect, it } from 'vitest';
import { ImportBatcher, type ImportBatcherOptions } from '../../actors/fleet/metrics/batcher.ts';
import { batchToSeries, isTsdbRefusal } from '../../actors/fleet/metrics/ingest.ts';
import { TsdbError, type ImportSeries } from '../../actors/fleet/metrics/tsdb.ts';
import { MetricBatch } from '../../contracts/domains/agent-telemetry.ts';
import { seededRandom } from '../../platform/seeded-random.ts';

const row = (name: string, n = 1): ImportSeries => ({
  metric: { __name__: name },
  values: Array.from({ length: n }, (_, i) => i),
  timestamps: Array.from({ length: n }, (_, i) => 1_000 + i),
});

/** A batcher whose imports are recorded; `fail` decides per call (0-based) whether that import throws. */
function recording(
  opts: Partial<ImportBatcherOptions> & { fail?: (call: number, rows: readonly ImportSeries[]) => unknown } = {},
) {
  const calls: string[][] = [];
  let running = 0;
  let peak = 0;
  const batcher = new ImportBatcher({
    maxDelayMs: 20,
    maxSamples: 1_000,
    maxConcurrentWrites: 2,
    isRefusal: isTsdbRefusal,
    ...opts,
    write: async (rows) => {
      const call = calls.push(rows.map((r) => r.metric.__name__)) - 1;
      running++;
      peak = Math.max(peak, running);
      try {
        await new Promise((r) => setTimeout(r, 5));
        const err = opts.fail?.(call, rows);
        if (err) throw err;
      } finally {
        running--;
      }
    },
  });
  return { batcher, calls, peak: () => peak };
}

describe('ImportBatcher', () => {
  it('puts rows added within the delay into one import and resolves every caller after it', async () => {
    const { batcher, calls } = recording();
    const added = ['a', 'b', 'c'].map((n) => batcher.add([row(n)]));
    expect(calls).toEqual([]);
    await Promise.all(added);
    expect(calls).toEqual([['a', 'b', 'c']]);
    await batcher.close();
  });

  it('starts an import at once when maxSamples wait, and splits at that size', async () => {
    const { batcher, calls } = recording({ maxDelayMs: 60_000, maxSamples: 10 });
    const ab = [batcher.add([row('a', 6)]), batcher.add([row('b', 4)])];
    const c = batcher.add([row('c', 3)]);
    // a+b reach the size and go at once; c would wait a minute for its delay, and goes at close.
    await Promise.all(ab);
    expect(calls).toEqual([['a', 'b']]);
    expect(batcher.waitingSamples).toBe(3);
    await batcher.close();
    await c;
    expect(calls).toEqual([['a', 'b'], ['c']]);
  });

  it('rejects every caller of a failed import and stores nothing twice on the next try', async () => {
    const outage = new TsdbError('tsdb /api/v1/import: connection refused', 0, '');
    const { batcher, calls } = recording({ fail: (call) => (call === 0 ? outage : undefined) });
    const first = await Promise.allSettled([batcher.add([row('a')]), batcher.add([row('b')])]);
    expect(first.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((first[0] as PromiseRejectedResult).reason).toBe(outage);
    await batcher.add([row('a')]);
    expect(calls).toEqual([['a', 'b'], ['a']]);
    await batcher.close();
  });

  it('after a refusal imports each caller alone, so only the bad one fails', async () => {
    const refusal = new TsdbError('tsdb /api/v1/import: HTTP 400: cannot parse', 400, 'cannot parse');
    const { batcher, calls } = recording({
      fail: (_call, rows) => (rows.some((r) => r.metric.__name__ === 'bad') ? refusal : undefined),
    });
    const out = await Promise.allSettled([batcher.add([row('a')]), batcher.add([row('bad')]), batcher.add([row('c')])]);
    expect(out.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(calls).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
    await batcher.close();
  });

  it('runs at most maxConcurrentWrites imports at once and flushes the rest on close', async () => {
    const { batcher, calls, peak } = recording({ maxDelayMs: 60_000, maxSamples: 1, maxConcurrentWrites: 2 });
    const added = Array.from({ length: 7 }, (_, i) => batcher.add([row(`s${i}`)]));
    await Promise.all(added);
    expect(calls.flat().sort()).toEqual(['s0', 's1', 's2', 's3', 's4', 's5', 's6']);
    expect(peak()).toBe(2);
    const late = batcher.add([row('late', 1)]);
    await batcher.close();
    await late;
    await expect(batcher.add([row('after')])).rejects.toThrow(/closed/);
  });
});

describe('batchToSeries', () => {
  const agent = { agent_id: 'a1', host_id: 'h1', environment_id: 'e1', client_id: 'c1' };

  it('writes one row per sample in the batch order, adds the tenant labels, and times untimed samples at collected_at', () => {
    const batch = MetricBatch.parse({
      collected_at: '2026-01-02T03:04:05.678Z',
      samples: [
        { name: 'cpu', value: 1, time_ms: 10, labels: { cpu: '0', mode: 'user' } },
        { name: 'cpu', value: 2, time_ms: 20, labels: { mode: 'user', cpu: '0' } },
        { name: 'cpu', value: 3, time_ms: 10, labels: { cpu: '1', mode: 'user' } },
        { name: 'mem', value: 4.5 },
      ],
    });
    const rows = batchToSeries(agent, batch);
    const tenant = { host_id: 'h1', environment_id: 'e1', client_id: 'c1' };
    expect(rows).toEqual([
      { metric: { __name__: 'cpu', cpu: '0', mode: 'user', ...tenant }, values: [1], timestamps: [10] },
      { metric: { __name__: 'cpu', cpu: '0', mode: 'user', ...tenant }, values: [2], timestamps: [20] },
      { metric: { __name__: 'cpu', cpu: '1', mode: 'user', ...tenant }, values: [3], timestamps: [10] },
      { metric: { __name__: 'mem', ...tenant }, values: [4.5], timestamps: [Date.parse('2026-01-02T03:04:05.678Z')] },
    ]);
    expect(rows.some((r) => 'agent_id' in r.metric)).toBe(false);
  });

  it('writes lines JSON reads back exactly, whatever the label values and however many labels, in any key order', () => {
    const rand = seededRandom(20261122);
    const values = [
      'plain',
      'with "quotes"',
      'back\\slash',
      'line\nbreak',
      'tab\there',
      'ünïcödé',
      '雪',
      '😀 emoji',
      'del\u007f',
      '',
      ' spaced ',
      '{json}',
      "it's",
    ];
    const names = ['mode', 'cpu', 'device', 'pid', 'process_name', 'a', 'Z', 'mount_point'];
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const samples = Array.from({ length: 400 }, (_, i) => {
      const labels: Record<string, string> = {};
      // 0 to 4 labels, inserted in random order (series repeat: each sample is still its own line).
      for (let k = Math.floor(rand() * 5); k > 0; k--) labels[pick(names)] = pick(values);
      return { name: `m_${i % 7}`, value: Math.round(rand() * 1e6) / 100, time_ms: 1_000 + i, labels };
    });
    const batch = MetricBatch.parse({ collected_at: '2026-01-02T03:04:05.678Z', samples });
    const tenant = { host_id: 'h1', environment_id: 'e1', client_id: 'c1' };
    // What the rows must be, built the plain way: one per sample, labels sorted, in the batch's order.
    const expected: ImportSeries[] = batch.samples.map((s) => ({
      metric: {
        __name__: s.name,
        ...Object.fromEntries(Object.entries(s.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
        ...tenant,
      },
      values: [s.value],
      timestamps: [s.time_ms!],
    }));
    const rows = batchToSeries(agent, batch);
    expect(rows).toEqual(expected);
    // Label order inside each line is the sorted one (one series, one line, whatever order the agent sent).
    for (const r of rows) expect(Object.keys(r.metric).slice(1, -3)).toEqual(Object.keys(r.metric).slice(1, -3).sort());
  });

  it('classifies VictoriaMetrics answers: 4xx is a refusal, outages and throttling are not', () => {
    expect(isTsdbRefusal(new TsdbError('x', 400, ''))).toBe(true);
    expect(isTsdbRefusal(new TsdbError('x', 422, ''))).toBe(true);
    for (const status of [0, 408, 429, 500, 503]) expect(isTsdbRefusal(new TsdbError('x', status, ''))).toBe(false);
    expect(isTsdbRefusal(new Error('x'))).toBe(false);
  });
});
