import { randomBytes } from 'node:crypto';
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
    // A namespace per run keeps concurrent runs on one NATS server (two developers, CI beside a session) apart.
    env: { SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent', SVC_NAMESPACE: process.env.SVC_NAMESPACE ?? `t${randomBytes(4).toString('hex')}` },
  },
});
