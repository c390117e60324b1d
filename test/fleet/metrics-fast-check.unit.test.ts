import { describe, expect, it } from 'vitest';
import { batchToImport } from '../../actors/fleet/metrics/ingest.ts';
import { MetricBatch, MetricBatchIngest } from '../../contracts/domains/agent-telemetry.ts';
import { describeZodError } from '../../contracts/errors.ts';

/**
 * The ingest's MetricBatchIngest must decide every batch exactly as MetricBatch does: the same acceptance, the same
 * parsed value, and for a refusal the same issues (the dead letter's error text is made of them).
 */

const T = '2024-05-01T12:00:00.000Z';

/** Both schemas on a deep copy each (the fast path fills in `labels`, as the schema's default does). */
function both(input: unknown): void {
  const copy = (): unknown => (input === undefined ? undefined : JSON.parse(JSON.stringify(input)));
  const slow = MetricBatch.safeParse(copy());
  const fast = MetricBatchIngest.safeParse(copy());
  expect(fast.success, JSON.stringify(input).slice(0, 300)).toBe(slow.success);
  if (slow.success && fast.success) expect(fast.data).toEqual(slow.data);
  if (!slow.success && !fast.success) {
    expect(describeZodError(fast.error)).toBe(describeZodError(slow.error));
    expect(fast.error.issues.map((i) => [i.path, i.message])).toEqual(
      slow.error.issues.map((i) => [i.path, i.message]),
    );
  }
}

const sample = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'cpu_usage_percent',
  value: 1.5,
  time_ms: 1_714_564_800_000,
  ...over,
});
const batch = (samples: unknown, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  collected_at: T,
  samples,
  ...over,
});

describe('MetricBatchIngest against MetricBatch', () => {
  it('accepts the same good batches with the same value', () => {
    both(batch([sample()]));
    both(
      batch([sample({ labels: { cpu: '0', mode: 'user' } }), sample({ time_ms: undefined }), { name: 'x', value: -0 }]),
    );
    both(
      batch([
        sample({ labels: {} }),
        sample({ value: 1e300, time_ms: 0 }),
        sample({ labels: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`l${i}`, 'v'.repeat(1024)])) }),
      ]),
    );
    both(batch([sample({ name: 'a'.repeat(200), labels: { ['_'.repeat(100)]: '' } })]));
    both(batch(Array.from({ length: 20_000 }, (_, i) => sample({ value: i }))));
    both(batch([sample()], { collected_at: '2024-05-01T12:00:00+02:00' }));
    // And these take the fast path: the parsed batch itself comes back, not the schema's copy.
    const input = batch([sample({ labels: { cpu: '0' } }), sample()]);
    expect(MetricBatchIngest.parse(input)).toBe(input);
  });

  it('accepts what only the schema accepts, as the schema outputs it', () => {
    // Unknown keys are stripped by the schema; a `__proto__` label is dropped by it.
    both(batch([sample({ extra: 1 })]));
    both(batch([sample()], { agent: 'x' }));
    both(JSON.parse(`{"collected_at":"${T}","samples":[{"name":"a","value":1,"labels":{"__proto__":"x","ok":"y"}}]}`));
  });

  it('refuses the same bad batches with the same issues', () => {
    const bad: unknown[] = [
      null,
      [],
      'batch',
      42,
      {},
      { collected_at: T },
      batch([]),
      batch({}),
      batch([null]),
      batch([[]]),
      batch(Array.from({ length: 20_001 }, () => sample())),
      batch([sample()], { collected_at: 'yesterday' }),
      batch([sample()], { collected_at: 1_714_564_800_000 }),
      batch([sample()], { collected_at: '2024-05-01 12:00:00' }),
      batch([sample({ name: '1bad-name' })]),
      batch([sample({ name: '' })]),
      batch([sample({ name: 'a'.repeat(201) })]),
      batch([sample({ name: 5 })]),
      batch([sample({ name: undefined })]),
      batch([sample({ value: 'NaN' })]),
      batch([sample({ value: null })]),
      batch([sample({ value: undefined })]),
      batch([sample({ time_ms: -1 })]),
      batch([sample({ time_ms: 1.5 })]),
      batch([sample({ time_ms: 2 ** 53 })]),
      batch([sample({ time_ms: null })]),
      batch([sample({ time_ms: '1' })]),
      batch([sample({ labels: null })]),
      batch([sample({ labels: [] })]),
      batch([sample({ labels: 'cpu=0' })]),
      batch([sample({ labels: { cpu: 0 } })]),
      batch([sample({ labels: { cpu: null } })]),
      batch([sample({ labels: { '0cpu': '0' } })]),
      batch([sample({ labels: { 'cpu-id': '0' } })]),
      batch([sample({ labels: { ['a'.repeat(101)]: '0' } })]),
      batch([sample({ labels: { cpu: 'v'.repeat(1025) } })]),
      batch([sample({ labels: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`l${i}`, 'v'])) })]),
      ...['host_id', 'environment_id', 'client_id', 'agent_id', '__name__'].map((r) =>
        batch([sample({ labels: { [r]: 'x' } })]),
      ),
      // Several faults at once: the issues (and their order) must match too.
      batch([sample({ name: '1x', value: 'y' }), sample({ labels: { client_id: 'c', 'b-d': 1 } })], {
        collected_at: 'now',
      }),
      batch([sample(), sample({ extra: 1, value: Infinity })]),
    ];
    for (const b of bad) both(b);
  });

  it('agrees on random mutations of a good batch', () => {
    // A small deterministic generator: values that are right, wrong, or at a limit, in random combinations.
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const pick = <V>(xs: readonly V[]): V => xs[rnd(xs.length)]!;
    const names = ['ok_name', 'a:b', '_x', '9x', '', 'a'.repeat(200), 'a'.repeat(201), 'bad name', 7];
    const values: unknown[] = [0, -3.5, 1e21, '1', null, true, [], {}];
    const times: unknown[] = [undefined, 0, 1_714_564_800_000, -1, 0.5, 2 ** 53 - 1, 2 ** 53, '5', null];
    const labelNames = [
      'cpu',
      'mode',
      '_',
      'host_id',
      '__name__',
      '0a',
      'a-b',
      'x'.repeat(100),
      'x'.repeat(101),
      'constructor',
      'toString',
    ];
    const labelValues: unknown[] = ['', 'v', 'v'.repeat(1024), 'v'.repeat(1025), 0, null, ['a']];
    for (let i = 0; i < 3_000; i++) {
      const samples = Array.from({ length: 1 + rnd(3) }, () => {
        const s: Record<string, unknown> = { name: pick(names), value: pick(values) };
        const t = pick(times);
        if (t !== undefined) s.time_ms = t;
        if (rnd(3) > 0)
          s.labels = Object.fromEntries(Array.from({ length: rnd(4) }, () => [pick(labelNames), pick(labelValues)]));
        if (rnd(10) === 0) s.extra = 1;
        if (rnd(20) === 0) delete s.value;
        return s;
      });
      both(batch(samples, rnd(10) === 0 ? { collected_at: pick(['x', 5, null, '2024-05-01T12:00:00Z']) } : {}));
    }
  });
});

describe('import lines', () => {
  it('are one JSON line per sample, label values escaped, numbers as JSON writes them', () => {
    const agent = { agent_id: 'a1', host_id: 'h1', environment_id: 'e1', client_id: 'c1' };
    const odd = '/a "b"\\c\n\u0000é,}';
    const batch = MetricBatchIngest.parse({
      collected_at: '2026-01-02T03:04:05.678Z',
      samples: [
        { name: 'cpu', value: 1.25, time_ms: 10, labels: { mode: 'user', cpu: '0' } },
        { name: 'odd', value: 1e21, labels: { path: odd } },
        { name: 'cpu', value: -0, time_ms: 20, labels: { cpu: '0', mode: 'user' } },
        { name: 'tiny', value: 5e-324, time_ms: 0 },
      ],
    });
    const chunk = batchToImport(agent, batch);
    expect(chunk.samples).toBe(4);
    const tenant = { host_id: 'h1', environment_id: 'e1', client_id: 'c1' };
    const lines = chunk.body.toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual([
      { metric: { __name__: 'cpu', cpu: '0', mode: 'user', ...tenant }, values: [1.25], timestamps: [10] },
      {
        metric: { __name__: 'odd', path: odd, ...tenant },
        values: [1e21],
        timestamps: [Date.parse('2026-01-02T03:04:05.678Z')],
      },
      { metric: { __name__: 'cpu', cpu: '0', mode: 'user', ...tenant }, values: [0], timestamps: [20] },
      { metric: { __name__: 'tiny', ...tenant }, values: [5e-324], timestamps: [0] },
    ]);
    expect(lines[0]).toBe(
      '{"metric":{"__name__":"cpu","cpu":"0","mode":"user","host_id":"h1","environment_id":"e1","client_id":"c1"},"values":[1.25],"timestamps":[10]}',
    );
    expect(lines[2]).toBe(
      '{"metric":{"__name__":"cpu","cpu":"0","mode":"user","host_id":"h1","environment_id":"e1","client_id":"c1"},"values":[0],"timestamps":[20]}',
    );
  });
});
