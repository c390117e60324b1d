import { describe, expect, it } from 'vitest';
import { MicroBatcher } from '../../platform/micro-batch.ts';

describe('MicroBatcher', () => {
  it('gathers concurrent adds into one write and hands each caller its own result', async () => {
    const writes: number[][] = [];
    const b = new MicroBatcher<number, number>({
      maxItems: 100,
      maxDelayMs: 20,
      write: async (xs) => (writes.push(xs), xs.map((x) => x * 2)),
    });
    const results = await Promise.all([1, 2, 3, 4].map((x) => b.add(x)));
    expect(results).toEqual([2, 4, 6, 8]);
    expect(writes).toEqual([[1, 2, 3, 4]]);
  });

  it('writes at once when maxItems wait, one write at a time, in order', async () => {
    const writes: number[][] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const b = new MicroBatcher<number, void>({
      maxItems: 3,
      maxDelayMs: 10_000,
      write: async (xs) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 10));
        writes.push(xs);
        inFlight--;
        return xs.map(() => undefined);
      },
    });
    const started = Date.now();
    await Promise.all(Array.from({ length: 9 }, (_, i) => b.add(i)));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(writes).toEqual([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7, 8],
    ]);
    expect(maxInFlight).toBe(1);
  });

  it('rejects every caller of a failed write, and the next write still happens', async () => {
    let fail = true;
    const b = new MicroBatcher<string, string>({
      maxItems: 10,
      maxDelayMs: 5,
      write: async (xs) => {
        if (fail) throw new Error('store down');
        return xs;
      },
    });
    const failed = await Promise.allSettled([b.add('a'), b.add('b')]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(b.add('c')).resolves.toBe('c');
    await b.flush();
  });
});
