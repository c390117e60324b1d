import { describe, expect, it } from 'vitest';
import {
  batchToChunk,
  batchToImport,
  ImportBuffers,
  linesToSeries,
  SenderTables,
  writeChunks,
} from '../../actors/fleet/metrics/ingest.ts';
import type { AgentRef } from '../../actors/fleet/telemetry/consume.ts';
import { MetricBatch, MetricBatchIngest, type MetricBatchIn } from '../../contracts/domains/agent-telemetry.ts';
import {
  CompactMetricBatch,
  decodeCompactMetricBatch,
  decodeMetricPayload,
  encodeCompactMetricBatch,
  isCompactMetricBatch,
  MetricBatchWire,
  MetricWireError,
  StringTableMemo,
} from '../../contracts/domains/metric-wire.ts';

const agent: AgentRef = {
  agent_id: '6f1c2a7e-8d4b-4c1e-9a3f-0b5d7e9c1a2b',
  host_id: '0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70',
  environment_id: '1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d',
  client_id: '9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a',
};

const T = Date.UTC(2026, 10, 27, 12, 0, 0);
/** Every shape the ingest meets: 0-3 labels (unsorted), own times, awkward numbers, label values needing escapes. */
const varied: MetricBatchIn = {
  collected_at: new Date(T).toISOString(),
  samples: [
    { name: 'cpu_usage_percent', value: 12.5 },
    { name: 'cpu_usage_percent', value: 0, labels: { cpu: '0' } },
    { name: 'process_cpu_usage', value: 3, labels: { process_name: 'nginx: worker', pid: '4242' } },
    { name: 'process_cpu_usage', value: -0, labels: { pid: '1', process_name: 'systemd' } },
    { name: 'disk_used_bytes', value: 123456789012, labels: { mountpoint: '/', device: '/dev/sda1', fstype: 'ext4' } },
    { name: 'net_rx', value: 999_999_999, time_ms: T - 10_000, labels: { interface: 'eth0' } },
    { name: 'net_rx', value: 1e9, time_ms: T - 5_000, labels: { interface: 'eth0' } },
    {
      name: 'weird_values',
      value: 1e21,
      labels: { quoted: 'say "hi"\\now', unicode: 'zürich ✓ 🚀', ctl: 'tab\there\nline' },
    },
    { name: 'tiny', value: 5e-324 },
    { name: 'huge', value: Number.MAX_VALUE },
    { name: 'negative', value: -17.25, labels: { a: '' } },
    { name: 'ns:colon_name', value: 7, labels: { _under: 'x' } },
  ],
};

/** A compact batch written by hand, for what the encoder never produces. */
class Raw {
  private readonly bytes: number[] = [0x00, 0x53, 0x4d, 0x01];
  f64(v: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    this.bytes.push(...b);
    return this;
  }
  uv(n: number): this {
    while (n >= 0x80) {
      this.bytes.push((n & 0x7f) | 0x80);
      n = Math.floor(n / 128);
    }
    this.bytes.push(n);
    return this;
  }
  str(s: string | Uint8Array): this {
    const b = typeof s === 'string' ? new TextEncoder().encode(s) : s;
    return this.uv(b.length).push(...b);
  }
  push(...b: number[]): this {
    this.bytes.push(...b);
    return this;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

/** One sample named by string 0 with labels [name, value] index pairs and the value given. */
const oneSample = (
  strings: (string | Uint8Array)[],
  labels: [number, number][] = [],
  value = 1,
  collected = T,
): Uint8Array => {
  const r = new Raw().f64(collected).uv(strings.length);
  for (const s of strings) r.str(s);
  r.uv(1)
    .uv(0)
    .uv(labels.length << 1);
  for (const [k, v] of labels) r.uv(k).uv(v);
  return r.f64(value).done();
};

const refusal = (data: Uint8Array): string => {
  try {
    decodeCompactMetricBatch(data);
  } catch (err) {
    expect(err).toBeInstanceOf(MetricWireError);
    return (err as Error).message;
  }
  throw new Error('decoded what it should refuse');
};

describe('compact metric batches', () => {
  it('decode to the batch that was encoded, at a fraction of the JSON size', () => {
    const bytes = encodeCompactMetricBatch(varied);
    expect(isCompactMetricBatch(bytes)).toBe(true);
    expect(isCompactMetricBatch(new TextEncoder().encode(JSON.stringify(varied)))).toBe(false);
    const decoded = decodeCompactMetricBatch(bytes);
    expect(decoded.size).toBe(varied.samples.length);
    expect(decoded.toBatch()).toEqual(MetricBatch.parse(varied));
    expect(bytes.length).toBeLessThan(JSON.stringify(varied).length * 0.6);
  });

  it('become the same import lines, byte for byte, as the same batch sent as JSON', () => {
    const fromJson = batchToImport(agent, MetricBatchIngest.parse(JSON.parse(JSON.stringify(varied))));
    const fromCompact = batchToImport(
      agent,
      MetricBatchWire.parse(decodeMetricPayload(encodeCompactMetricBatch(varied))),
    );
    expect(fromCompact.samples).toBe(varied.samples.length);
    expect(fromCompact.body.toString('utf8')).toBe(fromJson.body.toString('utf8'));
    // And the lines say what was sent: values, times, escaped labels, the tenant.
    const rows = linesToSeries(fromCompact.body.toString('utf8'));
    expect(rows[7]).toEqual({
      metric: {
        __name__: 'weird_values',
        ctl: 'tab\there\nline',
        quoted: 'say "hi"\\now',
        unicode: 'zürich ✓ 🚀',
        host_id: agent.host_id,
        environment_id: agent.environment_id,
        client_id: agent.client_id,
      },
      values: [1e21],
      timestamps: [T],
    });
    expect(rows.map((r) => r.values[0])).toEqual(varied.samples.map((s) => (Object.is(s.value, -0) ? 0 : s.value)));
    expect(rows.map((r) => r.timestamps[0])).toEqual(varied.samples.map((s) => s.time_ms ?? T));
  });

  it('become the same lines for many batches in a row (the writer shares its buffers between batches)', () => {
    const batches = Array.from({ length: 40 }, (_, b): MetricBatchIn => ({
      collected_at: new Date(T + b * 10_000).toISOString(),
      samples: Array.from({ length: 300 }, (__, i) => ({
        name: `m_${i % 25}`,
        value: (b * 7 + i) % 1000,
        labels: i < 25 ? {} : ({ pid: String(i), process_name: `p-${i}` } as Record<string, string>),
      })),
    }));
    const compact = batches.map((b) => batchToImport(agent, decodeCompactMetricBatch(encodeCompactMetricBatch(b))));
    const json = batches.map((b) => batchToImport(agent, MetricBatch.parse(b)).body.toString('utf8'));
    expect(compact.map((c) => c.body.toString('utf8'))).toEqual(json);
  });

  it('pass MetricBatchWire as they are; JSON goes through the schema with its messages', () => {
    const decoded = decodeCompactMetricBatch(encodeCompactMetricBatch(varied));
    expect(MetricBatchWire.parse(decoded)).toBe(decoded);
    const viaJson: unknown = JSON.parse(JSON.stringify(varied));
    expect(MetricBatchWire.parse(viaJson)).toEqual(MetricBatch.parse(viaJson));
    const bad = MetricBatchWire.safeParse({
      collected_at: new Date(T).toISOString(),
      samples: [{ name: '1x', value: 1 }],
    });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues)).toContain('metric names');
    expect(() => decodeMetricPayload(new TextEncoder().encode('{not json'))).toThrow(
      'neither JSON nor a compact metric batch',
    );
    expect(decodeMetricPayload(new TextEncoder().encode('{"a":1}'))).toEqual({ a: 1 });
  });

  it('refuse what MetricBatch refuses, naming the place', () => {
    expect(refusal(oneSample(['1bad']))).toMatch(/sample 0: name "1bad": metric names/);
    expect(refusal(oneSample(['ok', 'a-b', 'v'], [[1, 2]]))).toMatch(/sample 0: label name "a-b": label names/);
    expect(refusal(oneSample(['ok', 'host_id', 'v'], [[1, 2]]))).toContain('set by the server');
    expect(refusal(oneSample(['ok', '__name__', 'v'], [[1, 2]]))).toContain('set by the server');
    expect(
      refusal(
        oneSample(
          ['ok', 'a', 'v', 'w'],
          [
            [1, 2],
            [1, 3],
          ],
        ),
      ),
    ).toContain('label a given twice');
    expect(refusal(oneSample(['ok'], [], NaN))).toContain('sample 0: value is not a finite number');
    expect(refusal(oneSample(['ok'], [], Infinity))).toContain('not a finite number');
    expect(refusal(oneSample(['ok', 'a', 'x'.repeat(1025)], [[1, 2]]))).toContain(
      'string 2: longer than 1024 characters',
    );
    expect(refusal(oneSample(['x'.repeat(201)]))).toContain('metric names');
    expect(refusal(oneSample(['ok', 'l'.repeat(101), 'v'], [[1, 2]]))).toContain('label names');
    const many = Array.from({ length: 21 }, (_, i): [number, number] => [i + 1, 0]);
    expect(refusal(oneSample(['ok', ...Array.from({ length: 21 }, (_, i) => `l${i}`)], many))).toContain(
      'at most 20 labels per sample',
    );
    expect(refusal(oneSample(['ok'], [], 1, -1))).toContain('collected_at');
    expect(refusal(oneSample(['ok'], [], 1, 1.5))).toContain('collected_at');
    // Time of a sample: a non-negative integer.
    expect(refusal(new Raw().f64(T).uv(1).str('ok').uv(1).uv(0).uv(1).f64(1).f64(-5).done())).toContain(
      'sample 0: time_ms',
    );
    // No samples, and more than a batch may carry.
    expect(refusal(new Raw().f64(T).uv(1).str('ok').uv(0).done())).toContain('samples: between 1 and 20000');
    expect(refusal(new Raw().f64(T).uv(1).str('ok').uv(20_001).done())).toContain('samples: between 1 and 20000');
  });

  it('refuse malformed bytes: version, indexes, UTF-8, trailing bytes, counts beyond the data', () => {
    const good = encodeCompactMetricBatch(varied);
    const v2 = Uint8Array.from(good);
    v2[3] = 2;
    expect(refusal(v2)).toContain('version 2 is not supported');
    expect(refusal(oneSample(['ok', 'a'], [[1, 5]]))).toContain(
      'sample 0: label value refers to string 5, beyond the table',
    );
    expect(refusal(oneSample(['ok', 'a', Uint8Array.of(0xc3, 0x28)], [[1, 2]]))).toContain(
      'string 2 is not valid UTF-8',
    );
    expect(refusal(Uint8Array.from([...good, 0]))).toContain('1 bytes after the last sample');
    // A count of strings the data cannot hold is refused before anything is allocated for it.
    expect(refusal(new Raw().f64(T).uv(4_000_000).done())).toMatch(/at most \d+ strings/);
    expect(refusal(new Raw().f64(T).uv(500_000).str('a').done())).toBe('truncated in the string table');
    expect(refusal(new Raw().f64(T).uv(100).str('a').done())).toContain('truncated');
    expect(refusal(new Raw().f64(T).uv(1).str('ok').uv(5000).push(0, 0).done())).toContain('truncated in the samples');
    expect(
      refusal(
        new Raw()
          .f64(T)
          .uv(1)
          .str('ok')
          .uv(1)
          .uv(0)
          .push(0xff, 0xff, 0xff, 0xff, 0xff, 0x01, ...new Array<number>(10).fill(0))
          .done(),
      ),
    ).toContain('sample 0: head: varint longer than 5 bytes');
    // Every cut of a good batch is refused, and only ever with a MetricWireError.
    for (let k = 0; k < good.length; k++) refusal(good.subarray(0, k));
  });

  it("take a sender's unchanged string table as read before, and still check every use of its strings", () => {
    const memo = new StringTableMemo();
    const first = decodeCompactMetricBatch(encodeCompactMetricBatch(varied), memo);
    const again = decodeCompactMetricBatch(
      encodeCompactMetricBatch({ ...varied, samples: varied.samples.map((x) => ({ ...x, value: x.value + 1 })) }),
      memo,
    );
    expect(again.strings).toBe(first.strings);
    expect(again.toBatch().samples.map((x) => x.value)).toEqual(varied.samples.map((x) => x.value + 1));

    // The same table, its label value now used as a metric name: refused although the table was taken as known.
    const table = ['ok', 'a', 'b-c'];
    const raw = (name: number): Uint8Array => {
      const r = new Raw().f64(T).uv(table.length);
      for (const t of table) r.str(t);
      return r
        .uv(1)
        .uv(name)
        .uv(1 << 1)
        .uv(1)
        .uv(2)
        .f64(1)
        .done();
    };
    const own = new StringTableMemo();
    expect(decodeCompactMetricBatch(raw(0), own).toBatch().samples).toEqual([
      { name: 'ok', value: 1, labels: { a: 'b-c' } },
    ]);
    const known = own.strings;
    expect(() => decodeCompactMetricBatch(raw(2), own)).toThrow('sample 0: name "b-c": metric names');
    expect(own.strings).toBe(known);
    // Refused after a memo hit, then the good batch again: still taken, still the same table, still refused after.
    expect(decodeCompactMetricBatch(raw(0), own).strings).toBe(known);
    expect(() => decodeCompactMetricBatch(raw(2), own)).toThrow('metric names');
    // A refused batch with another table leaves the memo as it was; a changed table is read and kept.
    expect(() => decodeCompactMetricBatch(oneSample(['1bad']), own)).toThrow(MetricWireError);
    expect(own.strings).toBe(known);
    expect(decodeCompactMetricBatch(raw(0), own).strings).toBe(known);
    const other = decodeCompactMetricBatch(oneSample(['other_metric']), own);
    expect(own.strings).toBe(other.strings);
    expect(other.strings).toEqual(['other_metric']);
  });

  it('keep one table per sender, the least recently heard-from dropped first, within a count and a byte budget', () => {
    const tables = new SenderTables({ maxSenders: 2 });
    const a = tables.of('svc.agent.a.metrics');
    const b = tables.of('svc.agent.b.metrics');
    expect(tables.of('svc.agent.a.metrics')).toBe(a);
    const c = tables.of('svc.agent.c.metrics');
    expect(tables.size).toBe(2);
    // b was the least recently heard from: it went; a and c stay.
    expect(tables.of('svc.agent.a.metrics')).toBe(a);
    expect(tables.of('svc.agent.c.metrics')).toBe(c);
    expect(tables.of('svc.agent.b.metrics')).not.toBe(b);
    expect(tables.size).toBe(2);

    // What the tables hold counts: senders with large tables push the oldest out, the one just heard from stays.
    const bytes = encodeCompactMetricBatch({
      collected_at: new Date(T).toISOString(),
      samples: Array.from({ length: 500 }, (_, i) => ({ name: `m_${i}`, value: i })),
    });
    const budget = new SenderTables({ budgetBytes: 120_000 });
    for (const s of ['x', 'y', 'z']) {
      decodeMetricPayload(bytes, budget.of(s));
      budget.account(s);
    }
    expect(budget.size).toBe(2);
    expect(budget.bytes).toBeLessThanOrEqual(120_000);
    expect(budget.bytes).toBeGreaterThan(50_000);
    const lone = new SenderTables({ budgetBytes: 10 });
    decodeMetricPayload(bytes, lone.of('only'));
    lone.account('only');
    expect(lone.size).toBe(1);
  });

  it('refuse what JSON could not say: times past 9999, batches standing for more than their JSON could carry', () => {
    expect(refusal(oneSample(['ok'], [], 1, 253_402_300_800_000))).toContain('up to the year 9999');
    expect(decodeCompactMetricBatch(oneSample(['ok'], [], 1, 253_402_300_799_999)).collectedAt).toBe(
      '9999-12-31T23:59:59.999Z',
    );
    // 20 labels referring to one 1,024-character value, 20,000 times: ~1 MB standing for gigabytes of lines.
    const r = new Raw().f64(T).uv(22).str('ok').str('v'.repeat(1024));
    for (let l = 0; l < 20; l++) r.str(`l${l}`);
    r.uv(20_000);
    for (let i = 0; i < 20_000; i++) {
      r.uv(0).uv(20 << 1);
      for (let l = 0; l < 20; l++) r.uv(2 + l).uv(1);
      r.f64(i);
    }
    expect(refusal(r.done())).toMatch(/names and labels come to more than 8388608 characters/);
  });

  it('keep a leading byte-order mark and drop a __proto__ label, as JSON.parse and MetricBatch do', () => {
    const batch = {
      collected_at: new Date(T).toISOString(),
      samples: [{ name: 'ok', value: 1, labels: { note: '\uFEFFx' } }],
    };
    const viaJson: unknown = JSON.parse(JSON.stringify(batch));
    expect(decodeCompactMetricBatch(encodeCompactMetricBatch(batch)).toBatch()).toEqual(MetricBatch.parse(viaJson));
    expect(batchToImport(agent, decodeCompactMetricBatch(encodeCompactMetricBatch(batch))).body.toString('utf8')).toBe(
      batchToImport(agent, MetricBatch.parse(viaJson)).body.toString('utf8'),
    );
    const proto = decodeCompactMetricBatch(
      oneSample(
        ['ok', '__proto__', 'v', 'a'],
        [
          [1, 2],
          [3, 2],
        ],
      ),
    );
    expect(proto.toBatch().samples[0]!.labels).toEqual({ a: 'v' });
    const jsonProto = MetricBatch.parse(
      JSON.parse(
        '{"collected_at":"2026-11-27T12:00:00Z","samples":[{"name":"ok","value":1,"labels":{"__proto__":"v","a":"v"}}]}',
      ),
    );
    expect(Object.keys(jsonProto.samples[0]!.labels)).toEqual(['a']);
  });

  it('write the imports of many batches into buffers used again from import to import', () => {
    const buffers = new ImportBuffers(2, 4096, 1024);
    const a = buffers.take(100);
    expect(a.length).toBe(1024);
    buffers.give(a);
    expect(buffers.take(1000)).toBe(a);
    expect(buffers.take(2000).length).toBe(2000);
    // Kept: at most two, none larger than 4096.
    const big = buffers.take(5000);
    buffers.give(big);
    expect(buffers.kept).toBe(0);
    buffers.give(a);
    buffers.give(Buffer.alloc(2048));
    buffers.give(Buffer.alloc(3000));
    expect(buffers.kept).toBe(2);
    // Several batches' lines one after the other, as the JSON path writes them, into a used buffer.
    const dirty = Buffer.alloc(1 << 20, 0x78);
    const batches = [varied, { ...varied, samples: varied.samples.slice(2, 5) }];
    const chunks = batches.map((b, i) =>
      batchToChunk(agent, i === 0 ? decodeCompactMetricBatch(encodeCompactMetricBatch(b)) : MetricBatch.parse(b)),
    );
    expect(writeChunks(chunks, dirty).toString('utf8')).toBe(
      batches.map((b) => batchToImport(agent, MetricBatch.parse(b)).body.toString('utf8')).join(''),
    );
  });

  it('never accepts what the schema refuses, whatever its bytes (seeded byte flips)', () => {
    const good = encodeCompactMetricBatch(varied);
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let accepted = 0;
    for (let round = 0; round < 3000; round++) {
      const bytes = Uint8Array.from(good);
      for (let f = 1 + rand(3); f > 0; f--) bytes[4 + rand(bytes.length - 4)] = rand(256);
      let decoded: CompactMetricBatch | undefined;
      try {
        decoded = decodeCompactMetricBatch(bytes);
      } catch (err) {
        expect(err).toBeInstanceOf(MetricWireError);
        continue;
      }
      accepted++;
      // What the decoder takes, the schema takes, unchanged.
      expect(MetricBatch.parse(decoded.toBatch())).toEqual(decoded.toBatch());
    }
    expect(accepted).toBeGreaterThan(0);
  });
});
