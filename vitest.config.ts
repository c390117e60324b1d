import { randomBytes } from 'node:crypto';
import { defineConfig } from 'vitest/config';

const namespace = process.env.SVC_NAMESPACE ?? `t${randomBytes(4).toString('hex')}`;
// chDB locks its data directory per process: each run gets its own, removed by test/global-setup.ts at the end.
const analyticsPath = `./data/analytics-test/runs/${namespace}`;
process.env.SVC_ANALYTICS_PATH = analyticsPath;
process.env.SVC_NAMESPACE = namespace;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
