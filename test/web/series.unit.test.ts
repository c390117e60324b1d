import { describe, expect, it } from 'vitest';
import { preferredSeries, toSeries } from '../../web/src/pages/hosts/series.ts';

describe('host chart series', () => {
  it('shows a gauge as it is and a counter as its rise per second, a reset as a gap', () => {
    const buckets = [
      { time: '2026-12-03T00:00:00Z', avg_value: 100 },
      { time: '2026-12-03T00:01:00Z', avg_value: 700 },
      { time: '2026-12-03T00:02:00Z', avg_value: 50 },
    ];
    const t0 = Date.parse('2026-12-03T00:00:00Z') / 1000;
    expect(toSeries(buckets, false)).toEqual([
      [t0, t0 + 60, t0 + 120],
      [100, 700, 50],
    ]);
    expect(toSeries(buckets, true)).toEqual([
      [t0, t0 + 60, t0 + 120],
      [null, 10, null],
    ]);
  });

  it('picks a real network interface before loopback, else the first series', () => {
    expect(preferredSeries(['interface=lo', 'interface=eth0'])).toBe('interface=eth0');
    expect(preferredSeries(['interface=lo'])).toBe('interface=lo');
    expect(preferredSeries(['interface=lo0', 'interface=lo'])).toBe('interface=lo0');
    expect(preferredSeries(['mountpoint=/', 'mountpoint=/data'])).toBe('mountpoint=/');
    expect(preferredSeries([])).toBeUndefined();
    expect(preferredSeries(undefined)).toBeUndefined();
  });
});
