import { loadConfig, type Config } from '../../actors/runtime/config.ts';

/** Config for tests: the machine's local services, overridable per test. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    SVC_DB_URL: process.env.SVC_DB_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
    SVC_NATS_URL: process.env.SVC_NATS_URL ?? 'nats://127.0.0.1:4222',
    SVC_VALKEY_URL: process.env.SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379',
    SVC_TSDB_URL: process.env.SVC_TSDB_URL ?? 'http://127.0.0.1:8428',
    SVC_ANALYTICS_PATH: process.env.SVC_ANALYTICS_PATH ?? './data/analytics-test',
    SVC_NAMESPACE: process.env.SVC_NAMESPACE ?? '',
    SVC_JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    SVC_MFA_ENCRYPTION_KEY: '0'.repeat(63) + '1',
    SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent',
    SVC_SERVER_PORT: '0',
    SVC_INVOICING_PORT: '0',
    ...overrides,
  });
}
