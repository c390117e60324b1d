import argon2 from 'argon2';
import { describe, expect, it, vi } from 'vitest';
import { PasswordHasher } from '../../actors/identity/passwords.ts';

describe('password hasher', () => {
  it('never runs more argon2 hashes at once than its cap, and refuses beyond its queue', async () => {
    const hasher = new PasswordHasher(2, 3);
    const hash = await hasher.hash('a long enough password');
    let peak = 0;
    const probe = setInterval(() => (peak = Math.max(peak, hasher.stats.active)), 1);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => hasher.verify(hash, 'a long enough password')),
    );
    clearInterval(probe);
    expect(peak).toBeLessThanOrEqual(2);
    // 2 running + 3 queued are served; the other 3 are refused with 'unavailable' (503), not queued without bound.
    expect(results.filter((r) => r.status === 'fulfilled' && r.value === true)).toHaveLength(5);
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(3);
    expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'unavailable' });
    expect(hasher.stats).toEqual({ active: 0, waiting: 0 });
  });

  it('spends a real verification on unknown accounts', async () => {
    const hasher = new PasswordHasher();
    await hasher.verifyDummy('warm-up');
    const t0 = performance.now();
    expect(await hasher.verifyDummy('whatever')).toBe(false);
    expect(performance.now() - t0).toBeGreaterThan(5);
  });

  it('makes the dummy hash inside the cap, once, so a cold unknown-e-mail check never adds an argon2 run', async () => {
    // Every argon2 call in flight, whoever started it: the cap must hold for the dummy hash too.
    let inFlight = 0;
    let peak = 0;
    let hashes = 0;
    const track =
      <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        inFlight += 1;
        peak = Math.max(peak, inFlight);
        try {
          return await fn(...args);
        } finally {
          inFlight -= 1;
        }
      };
    const realHash = argon2.hash.bind(argon2);
    const realVerify = argon2.verify.bind(argon2);
    const hashSpy = vi.spyOn(argon2, 'hash').mockImplementation(
      track(((...args: Parameters<typeof argon2.hash>) => {
        hashes += 1;
        return realHash(...args);
      }) as typeof argon2.hash),
    );
    const verifySpy = vi.spyOn(argon2, 'verify').mockImplementation(track(realVerify));
    try {
      const hasher = new PasswordHasher(1, 16);
      const real = await realHash('a long enough password', { type: argon2.argon2id });
      await Promise.all([
        hasher.verify(real, 'x'),
        hasher.verifyDummy('a'),
        hasher.verifyDummy('b'),
        hasher.verify(real, 'y'),
      ]);
      expect(peak).toBe(1);
      // One dummy hash for the life of the hasher, however many unknown e-mails arrive at once.
      expect(hashes).toBe(1);
      await hasher.warm();
      expect(hashes).toBe(1);
    } finally {
      hashSpy.mockRestore();
      verifySpy.mockRestore();
    }
  });
});
