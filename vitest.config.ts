import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Files share one PostgreSQL, NATS and Redis, and actors serve in queue groups: run files one after another so a
    // request is never answered by another file's actors.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    env: { SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent' },
  },
});
