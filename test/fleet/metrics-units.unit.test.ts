import { describe, expect, it } from 'vitest';
import { bucketsOf, counterBuckets, resolveRange, toPoints } from '../../actors/fleet/metrics/buckets.ts';
import { HostScopes } from '../../actors/fleet/metrics/host-scopes.ts';
import { LabelNamesCache } from '../../actors/fleet/metrics/label-names.ts';
import { labelsKeyOf, parseLabelsKey } from '../../actors/fleet/metrics/labels-key.ts';
import { guardQuery } from '../../actors/fleet/metrics/promql-guard.ts';
import { parsePromQL } from '../../actors/fleet/metrics/promql-parse.ts';
import { stepSeconds } from '../../actors/fleet/metrics/query-plan.ts';
import { isoUtc } from '../../platform/iso-time.ts';
import { TsdbError } from '../../actors/fleet/metrics/tsdb.ts';
import { tsdbFailure } from '../../actors/fleet/metrics/tsdb-errors.ts';

/** A tree with each metric name as its `__name__` matcher, as the canonical text writes it. */
const sameTree = (tree: unknown): unknown =>
  JSON.parse(JSON.stringify(tree), (_k, v: unknown) => {
    if (
      v &&
      typeof v === 'object' &&
      (v as { kind?: unknown }).kind === 'selector' &&
      typeof (v as { name?: unknown }).name === 'string'
    ) {
      const { name, matchers, ...rest } = v as { name: string; matchers: unknown[] };
      return { ...rest, matchers: [{ label: '__name__', op: '=', value: name }, ...matchers] };
    }
    return v;
  });

/** The pure parts of the metric read side: the PromQL guard, labels_key, buckets and counter rates, error mapping. */

describe('PromQL guard', () => {
  it('prints a canonical, fully parenthesized query that parses back to the same tree', () => {
    const cases: [string, string][] = [
      [
        'rate(http_requests_total{job="api", code=~"5.."}[5m])',
        'rate({__name__="http_requests_total", job="api", code=~"5.."}[300000ms])',
      ],
      ['a + b * c', '({__name__="a"}) + (({__name__="b"}) * ({__name__="c"}))'],
      ['-2 ^ 2', '-((2) ^ (2))'],
      ['2 ^ 3 ^ 2', '(2) ^ ((3) ^ (2))'],
      ['sum(x) by (a) / on(a) group_left y', '(sum by (a) ({__name__="x"})) / on(a) group_left() ({__name__="y"})'],
      [
        'max_over_time(rate(foo[1m])[1h:1m] offset 5m)',
        'max_over_time((rate({__name__="foo"}[60000ms]))[3600000ms:60000ms] offset 300000ms)',
      ],
      ['topk(5, foo) by (x)', 'topk by (x) (5, {__name__="foo"})'],
      ['foo @ end() offset -1m', '{__name__="foo"} offset -60000ms @ end()'],
      [
        "# a comment\nlabel_replace(foo, 'dst', '$1', 'src', '(.*)')",
        'label_replace({__name__="foo"}, "dst", "$1", "src", "(.*)")',
      ],
      ['foo{a="\\u00e9\\"x\\\\"}', '{__name__="foo", a="é\\"x\\\\"}'],
      ['0x1F + .5 + Inf', '((31) + (0.5)) + (Inf)'],
      ['foo > bool 1 and on() bar', '(({__name__="foo"}) > bool (1)) and on() ({__name__="bar"})'],
    ];
    for (const [q, canonical] of cases) {
      expect(guardQuery(q)).toBe(canonical);
      expect(sameTree(parsePromQL(canonical))).toEqual(sameTree(parsePromQL(q)));
      expect(guardQuery(canonical)).toBe(canonical);
    }
  });

  it('refuses what writes tenant labels, unknown functions, MetricsQL syntax and oversized queries', () => {
    const cases: [string, RegExp][] = [
      ['label_replace(foo, "client_id", "x", "", "")', /may not write the tenant label client_id/],
      ['label_join(foo, "host_id", ",", "a")', /tenant label host_id/],
      ['label_replace(foo, lower("client_id"), "x", "", "")', /must be a quoted string/],
      ['count_values("environment_id", foo)', /tenant label environment_id/],
      ['absent(foo{client_id="x"})', /absent over a selector naming/],
      ['absent_over_time(sum(foo{host_id=~".+"})[5m:])', /absent_over_time/],
      ['label_set(foo, "a", "b")', /function label_set is not allowed/],
      ['union(foo, bar)', /function union is not allowed/],
      ['WITH (x = foo) x', /not valid PromQL/],
      ['foo{a="b" or c="d"}', /not valid PromQL/],
      ['sum(foo) keep_metric_names', /not valid PromQL/],
      ['sum(foo) limit 5', /not valid PromQL/],
      ['foo default 0', /not valid PromQL/],
      ['{}', /needs a metric name or at least one matcher/],
      ['foo{__name__="bar"}', /also given as __name__/],
      ['foo[32d]', /31 days/],
      ['foo offset 40d', /31 days/],
      ['max_over_time(foo[1d:1s])', /subquery resolution/],
      ['(foo)[5m]x', /not valid PromQL/],
      ['"unterminated', /unterminated string/],
      ['foo{a="\\q"}', /unknown escape/],
      ['('.repeat(70) + 'foo' + ')'.repeat(70), /nests deeper/],
      [Array.from({ length: 21 }, (_, i) => `m${i}`).join(' or '), /21 series selectors/],
      ['x'.repeat(4097), /longer than 4096/],
      ['   ', /empty/],
    ];
    for (const [q, message] of cases) expect(() => guardQuery(q), q.slice(0, 40)).toThrow(message);
  });

  it('reads steps as durations or seconds', () => {
    expect([
      stepSeconds('60s'),
      stepSeconds('1m30s'),
      stepSeconds('500ms'),
      stepSeconds('2'),
      stepSeconds('1h'),
    ]).toEqual([60, 90, 0.5, 2, 3600]);
  });
});

describe('labels_key', () => {
  it('sorts keys, escapes commas and backslashes, ignores the name and tenant labels', () => {
    expect(labelsKeyOf({ __name__: 'x', host_id: 'h', mountpoint: '/a,b', fstype: 'ext4', note: 'c\\d=e' })).toBe(
      'fstype=ext4,mountpoint=/a\\,b,note=c\\\\d=e',
    );
    expect(labelsKeyOf({ __name__: 'x', client_id: 'c' })).toBe('');
  });

  it('parses what it prints, in any key order', () => {
    const labels = { mountpoint: '/a,b', fstype: 'ext4', note: 'c\\d=e', empty: '' };
    expect(parseLabelsKey(labelsKeyOf(labels))).toEqual(labels);
    expect(parseLabelsKey('b=2,a=1')).toEqual({ a: '1', b: '2' });
    expect(parseLabelsKey('')).toEqual({});
    for (const bad of ['cpu', '=1', 'a=1,,b=2', '1a=2', 'host_id=x', 'a=\\x', 'a=1,a=2'])
      expect(() => parseLabelsKey(bad), bad).toThrow(/labels_key/);
  });
});

describe('buckets', () => {
  const H = Date.UTC(2026, 10, 22, 10);
  it('uses 1-minute buckets up to exactly 6 hours and hourly beyond, aligned to the epoch', () => {
    expect(bucketsOf({ startMs: H + 30_000, endMs: H + 6 * 3_600_000 + 30_000 })).toEqual({
      sizeMs: 60_000,
      firstMs: H,
      lastMs: H + 6 * 3_600_000,
    });
    expect(bucketsOf({ startMs: H + 30_000, endMs: H + 6 * 3_600_000 + 90_000 })).toEqual({
      sizeMs: 3_600_000,
      firstMs: H,
      lastMs: H + 6 * 3_600_000,
    });
  });

  it('defaults to the last hour and refuses start after end or more than 31 days', () => {
    expect(resolveRange({}, H)).toEqual({ startMs: H - 3_600_000, endMs: H });
    expect(resolveRange({ end: new Date(H).toISOString() }, 0)).toEqual({ startMs: H - 3_600_000, endMs: H });
    expect(() => resolveRange({ start: new Date(H + 1).toISOString(), end: new Date(H).toISOString() }, 0)).toThrow(
      /start must not be after end/,
    );
    expect(() => resolveRange({ start: '1969-12-31T23:59:59Z', end: '1970-01-01T00:10:00Z' }, 0)).toThrow(/1970/);
    expect(() =>
      resolveRange({ start: new Date(H - 31 * 86_400_000 - 1).toISOString(), end: new Date(H).toISOString() }, 0),
    ).toThrow(/31 days/);
    expect(
      resolveRange({ start: new Date(H - 31 * 86_400_000).toISOString(), end: new Date(H).toISOString() }, 0).startMs,
    ).toBe(H - 31 * 86_400_000);
  });

  it('turns counters into per-second rates per bucket, a drop counted as a reset from zero', () => {
    const b = { sizeMs: 60_000, firstMs: H, lastMs: H + 60_000 };
    const raw = {
      timestamps: [H - 10_000, H, H + 10_000, H + 20_000, H + 30_000, H + 70_000, H + 10_000],
      values: [1000, 1100, 1300, 50, 250, 650, 1300],
    };
    const points = toPoints(counterBuckets([raw], b));
    expect(points).toEqual([
      { time: new Date(H).toISOString(), avg_value: 13.75, min_value: 5, max_value: 20, sample_count: 4 },
      { time: new Date(H + 60_000).toISOString(), avg_value: 10, min_value: 10, max_value: 10, sample_count: 1 },
    ]);
  });
});

describe('store failures', () => {
  it('maps what VictoriaMetrics answers to the routes’ errors', () => {
    const vm = (status: number, error: string) =>
      new TsdbError(`HTTP ${status}`, status, JSON.stringify({ status: 'error', errorType: String(status), error }));
    expect(tsdbFailure(new TsdbError('tsdb /api/v1/query: connect ECONNREFUSED', 0, ''))?.code).toBe('unavailable');
    expect(tsdbFailure(new TsdbError('tsdb /api/v1/query: timed out after 10000ms', 0, ''))?.code).toBe('timeout');
    expect(
      tsdbFailure(
        vm(422, 'error when executing query="x": cannot execute query: timeout exceeded while fetching data block #1'),
      )?.code,
    ).toBe('timeout');
    const limit = tsdbFailure(
      vm(422, 'error when executing query="x": cannot select more than -search.maxSamplesPerQuery=5 samples'),
      { callerQuery: false },
    );
    expect([limit?.code, limit?.message]).toEqual([
      'bad_request',
      'the query exceeds a limit of the metrics store: cannot select more than -search.maxSamplesPerQuery=5 samples',
    ]);
    expect(tsdbFailure(vm(422, 'unknown func "nope"'), { callerQuery: true })?.code).toBe('bad_request');
    expect(tsdbFailure(vm(422, 'unknown func "nope"'))?.code).toBe('bad_gateway');
    expect(tsdbFailure(vm(503, 'busy'))?.code).toBe('unavailable');
    expect(tsdbFailure(vm(429, 'busy'))?.code).toBe('unavailable');
    expect(tsdbFailure(vm(500, 'panic'))?.code).toBe('bad_gateway');
    expect(tsdbFailure(new Error('other'))).toBeUndefined();
  });
});

describe('label names cache', () => {
  it('answers what was set and learnt, per host and metric, until it expires; learning alone creates nothing', () => {
    let t = 0;
    const cache = new LabelNamesCache(1_000, 3, () => t);
    expect(cache.get('h1', 'cpu')).toBeUndefined();
    cache.learn('h1', 'cpu', ['cpu']);
    expect(cache.get('h1', 'cpu')).toBeUndefined();
    cache.set('h1', 'cpu', []);
    cache.learn('h1', 'cpu', ['core']);
    expect([...cache.get('h1', 'cpu')!]).toEqual(['core']);
    expect(cache.get('h2', 'cpu')).toBeUndefined();
    expect(cache.get('h1', 'mem')).toBeUndefined();
    t = 999;
    expect(cache.get('h1', 'cpu')).toBeDefined();
    t = 1_000;
    expect(cache.get('h1', 'cpu')).toBeUndefined();
    // Bounded: full, it starts over.
    for (const m of ['a', 'b', 'c', 'd']) cache.set('h1', m, ['x']);
    expect(cache.get('h1', 'a')).toBeUndefined();
    expect(cache.get('h1', 'd')).toBeDefined();
  });
});

describe('HostScopes', () => {
  it('keeps a host for ttlMs, at most maxEntries of them (oldest first), and forgets deleted ones', () => {
    let now = 0;
    const scopes = new HostScopes(5_000, 2, () => now);
    scopes.set({ id: 'h1', client_id: 'c1' }, scopes.mark);
    scopes.set({ id: 'h2', client_id: 'c1' }, scopes.mark);
    expect(scopes.get('h1')).toEqual({ id: 'h1', client_id: 'c1' });
    scopes.set({ id: 'h3', client_id: 'c2' }, scopes.mark);
    expect(scopes.get('h1')).toBeUndefined();
    expect(scopes.get('h3')?.client_id).toBe('c2');
    scopes.forget('h3');
    expect(scopes.get('h3')).toBeUndefined();
    now = 4_999;
    expect(scopes.get('h2')).toBeDefined();
    now = 5_000;
    expect(scopes.get('h2')).toBeUndefined();
    scopes.set({ id: 'h4', client_id: 'c1' }, scopes.mark);
    scopes.forgetAll();
    expect(scopes.get('h4')).toBeUndefined();
    // A row read before a host was forgotten (its delete committing meanwhile) is not kept.
    const before = scopes.mark;
    scopes.forget('h9');
    scopes.set({ id: 'h9', client_id: 'c1' }, before);
    expect(scopes.get('h9')).toBeUndefined();
  });
});

describe('isoUtc', () => {
  it('writes what Date#toISOString writes, across days, years and the edges of four-digit years', () => {
    const edges = [
      0, 1, 999, 59_999, 86_399_999, 86_400_000, 951_782_400_000, 951_868_799_999, 1_764_201_600_000, -1, -86_400_001,
      -62_167_219_200_000, 253_402_300_799_999,
    ];
    const outside = [-62_167_219_200_001, 253_402_300_800_000, 1.5];
    const random = Array.from({ length: 2_000 }, (_, i) => Math.round(Math.sin(i + 1) * 4e12));
    for (const ms of [...edges, ...outside, ...random]) expect(isoUtc(ms)).toBe(new Date(ms).toISOString());
    // The kept day must not leak into the next call on another day.
    expect([isoUtc(86_400_000 - 1), isoUtc(86_400_000), isoUtc(0)]).toEqual([
      '1970-01-01T23:59:59.999Z',
      '1970-01-02T00:00:00.000Z',
      '1970-01-01T00:00:00.000Z',
    ]);
  });
});
