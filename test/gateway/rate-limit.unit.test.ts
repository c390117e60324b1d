import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryKv } from '../../platform/stores/kv.ts';
import { RateWindows } from '../../gateway/shared/rate-limit.ts';

/**
 * RateWindows (hits reserved in batches) over the in-process store on a fake clock: what happens at a window's end.
 * Against Valkey, and through the gateways: rate-limit.test.ts.
 */
describe('RateWindows: a reservation answered after its window ended', () => {
  const T = Date.UTC(2026, 10, 27, 12);
  /** The in-process store on a fake clock, its answers held until released: a slow Valkey at a window's end. */
  const held = () => {
    const kv = new MemoryKv('rw-held:');
    let release: () => void = () => undefined;
    let gate: Promise<void> = Promise.resolve();
    return {
      kv,
      hold: (): void => {
        gate = new Promise<void>((r) => (release = r));
      },
      release: () => release(),
      store: {
        hitWindow: async (key: string, windowMs: number, hits?: number) => {
          const answer = await kv.hitWindow(key, windowMs, hits);
          await gate;
          return answer;
        },
      },
    };
  };
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T);
  });
  afterEach(() => vi.useRealTimers());

  /**
   * One hit at T, then one at T + 59 s whose reservation is answered only after `late` more hits arrived at
   * T + 61 s, past the window's end: what each got, and the store's counter after.
   */
  const acrossTheEnd = async (limit: number, late: number) => {
    const h = held();
    const windows = new RateWindows(h.store, limit, 60_000, () => Date.now());
    const first = await windows.hit('k');
    vi.setSystemTime(T + 59_000);
    h.hold();
    const last = windows.hit('k');
    vi.setSystemTime(T + 61_000);
    const next = Array.from({ length: late }, () => windows.hit('k'));
    h.release();
    const verdicts = { first, last: await last, next: await Promise.all(next), counter: await h.kv.get('k') };
    await h.kv.close();
    return verdicts;
  };

  it('gives what it left to no hit of the next window: those reserve in their own', async () => {
    // The second reservation takes 2 in the first window (counter 3) and is answered past its end.
    const { first, last, next, counter } = await acrossTheEnd(1_000, 2);
    expect([first, last, ...next]).toEqual(Array.from({ length: 4 }, () => ({ allowed: true })));
    // The late hits were counted in the new window: the first window's unused hit went with it.
    expect(counter).toBe('2');
  });

  it('does not refuse hits of the next window because the ended one is full', async () => {
    const { first, last, next, counter } = await acrossTheEnd(2, 1);
    expect([first, last, ...next]).toEqual(Array.from({ length: 3 }, () => ({ allowed: true })));
    expect(counter).toBe('1');
  });

  it('sweeps the leases of ended windows once a thousand keys are held', async () => {
    const kv = new MemoryKv('rw-sweep:');
    const windows = new RateWindows(kv, 1_000, 60_000, () => Date.now());
    for (let i = 0; i < 1_000; i++) await windows.hit(`ip-${i}`);
    expect(windows.size).toBe(1_000);
    vi.setSystemTime(T + 60_000);
    expect(await windows.hit('one-more')).toEqual({ allowed: true });
    expect(windows.size).toBe(1);
    await kv.close();
  });
});
