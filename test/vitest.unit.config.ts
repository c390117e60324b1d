import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The unit tier, `npm run test:unit` (and the first half of `npm test`): the files named `*.unit.test.ts`, pure code
 * (grammars, amounts, wire formats, schemas, parsers, configuration, gateway routes through Fastify's inject). No
 * PostgreSQL, Valkey, NATS or VictoriaMetrics, no set-up script, no global setup, no root: the files run in parallel,
 * and test/unit-guard.ts refuses any network connection they try. Everything else is the integration tier
 * (vitest.config.ts, at the root), which excludes these files. `--configLoader runner` (package.json, scripts/test.sh)
 * reads this file without writing a bundle of it into node_modules: a user who cannot write the checkout runs it too.
 */
export default defineConfig({
  // The repository (this file lives in test/ so that the type check and the linter cover it like the tests).
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    include: ['test/**/*.unit.test.ts'],
    fileParallelism: true,
    setupFiles: ['test/unit-guard.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    reporters: ['default'],
    env: { SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent' },
  },
});
