import { randomBytes } from 'node:crypto';
import { configDefaults, defineConfig } from 'vitest/config';

const namespace = process.env.SVC_NAMESPACE ?? `t${randomBytes(4).toString('hex')}`;
// chDB locks its data directory per process: each run gets its own, removed by test/global-setup.ts at the end.
const analyticsPath = `./data/analytics-test/runs/${namespace}`;
process.env.SVC_ANALYTICS_PATH = analyticsPath;
process.env.SVC_NAMESPACE = namespace;

export default defineConfig({
  test: {
    // The integration tier, against the real services: every test file but the unit tier's (test/vitest.unit.config.ts)
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, 'test/**/*.unit.test.ts'],
    // Files share one PostgreSQL, NATS and Redis, and actors serve in queue groups: run files one after another so a
    // request is never answered by another file's actors.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // A namespace per run keeps concurrent runs on one NATS server (two developers, CI beside a session) apart.
    env: {
      SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent',
      SVC_NAMESPACE: namespace,
      SVC_ANALYTICS_PATH: analyticsPath,
    },
    globalSetup: ['test/global-setup.ts'],
  },
});
