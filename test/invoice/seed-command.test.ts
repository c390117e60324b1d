import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openChdbAnalytics } from '../../actors/invoice/analytics/store.ts';
import { brokerEnv, testConfig } from '../support/env.ts';

// A namespace where no invoice domain serves, and a chDB directory of its own: the command must run the domain itself.
const namespace = `seed${randomBytes(3).toString('hex')}`;
const dir = join(tmpdir(), `chdb-seed-${namespace}`);
afterAll(() => rm(dir, { recursive: true, force: true }));

function runSeed(): Promise<{ code: number | null; output: string }> {
  const env = {
    ...process.env,
    ...brokerEnv(),
    SVC_DB_URL: testConfig().SVC_DB_URL,
    SVC_NAMESPACE: namespace,
    SVC_ANALYTICS_PATH: dir,
    SVC_LOG_LEVEL: 'info',
  };
  const proc = spawn(process.execPath, ['scripts/seed/seed-demo.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (b: Buffer) => (output += b.toString()));
  proc.stderr.on('data', (b: Buffer) => (output += b.toString()));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, output })));
}

describe('npm run seed:demo (scripts/seed/seed-demo.ts)', () => {
  it('runs the invoice domain itself when none serves, stores the demo set, and a second run duplicates nothing', async () => {
    const first = await runSeed();
    expect(first.code, first.output).toBe(0);
    expect(first.output).toContain('no invoice domain serves this system: running it in this process while seeding');
    expect(first.output).toMatch(/"worklogs":100000.*"msg":"demo data stored"/);
    const second = await runSeed();
    expect(second.code, second.output).toBe(0);

    // Both runs have exited: this process may open their chDB directory now.
    const store = await openChdbAnalytics(dir);
    try {
      const [row] = await store.query<{ worklogs: string; apps: string; active: string }>(
        `SELECT (SELECT count() FROM worklogs FINAL) AS worklogs, (SELECT count() FROM applications FINAL) AS apps, (SELECT countIf(is_active) FROM applications FINAL) AS active`,
      );
      expect(row).toEqual({ worklogs: '100000', apps: '60', active: '55' });
    } finally {
      await store.close();
    }
  }, 180_000);
});
