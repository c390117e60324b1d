import { describe, expect, it } from 'vitest';
import { PasswordHasher } from '../../actors/identity/passwords.ts';

describe('password hasher', () => {
  it('never runs more argon2 hashes at once than its cap, and refuses beyond its queue', async () => {
    const hasher = new PasswordHasher(2, 3);
    const hash = await hasher.hash('a long enough password');
    let peak = 0;
    const probe = setInterval(() => (peak = Math.max(peak, hasher.stats.active)), 1);
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => hasher.verify(hash, 'a long enough password')));
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
});
