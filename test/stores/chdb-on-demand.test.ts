import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * libchdb is 566 MB, and a process that has loaded it holds ~150 MB more RSS: only the process that opens the embedded
 * analytics store may load it, not every process that imports the system's modules (a gateway, the fleet, a process
 * whose analytics are on a ClickHouse server).
 */
function loadsChdb(script: string): boolean {
  const run = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `${script}\nconst { readFileSync } = await import('node:fs');\nprocess.stdout.write(String(readFileSync('/proc/self/maps', 'utf8').includes('libchdb.so')));`,
    ],
    { encoding: 'utf8', cwd: process.cwd(), env: { ...process.env, NODE_OPTIONS: '' }, timeout: 60_000 },
  );
  expect(run.stderr).toBe('');
  return run.stdout === 'true';
}

describe('chDB loaded on demand', () => {
  it('is not in a process that imports every domain, both gateways and the stores but opens no embedded store', () => {
    expect(
      loadsChdb(
        `await import('./main.ts'); await import('./actors/index.ts'); await import('./actors/invoice/analytics/store.ts');`,
      ),
    ).toBe(false);
  });

  it('is loaded once the embedded store is opened', () => {
    expect(
      loadsChdb(
        `const { mkdtempSync } = await import('node:fs');\nconst { openAnalytics } = await import('./actors/invoice/analytics/store.ts');\nconst store = await openAnalytics({ SVC_ANALYTICS_PATH: mkdtempSync('/tmp/chdb-on-demand-') });\nawait store.close();`,
      ),
    ).toBe(true);
  });
});
