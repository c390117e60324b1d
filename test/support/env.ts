import { join, resolve } from 'node:path';
import { loadConfig, type Config } from '../../platform/config.ts';
import { ContextSigner } from '../../platform/signing.ts';

/** The local broker's files (scripts/local-nats.ts, run by `npm test`'s set-up). */
export const NATS_DIR = resolve('data/nats');
export const NATS_FILES = {
  serviceCreds: join(NATS_DIR, 'service.creds'),
  adminCreds: join(NATS_DIR, 'admin.creds'),
  issuerKey: join(NATS_DIR, 'account-signing.nk'),
  operatorKey: join(NATS_DIR, 'operator-signing.nk'),
  systemCreds: join(NATS_DIR, 'system.creds'),
  serverConfig: join(NATS_DIR, 'nats-server.conf'),
  ca: join(NATS_DIR, 'ca.pem'),
};
export const NATS_URL = process.env.SVC_NATS_URL ?? 'nats://127.0.0.1:4223';
export const NATS_CREDS = process.env.SVC_NATS_CREDS ?? NATS_FILES.serviceCreds;
/** The maintenance user: the only one allowed to delete and purge streams (the tests' clean-up). */
export const NATS_ADMIN_CREDS = process.env.SVC_NATS_ADMIN_CREDS ?? NATS_FILES.adminCreds;
/** The CA the broker's TLS certificate chains to (setup.sh's default: the one local-nats.ts made). */
export const NATS_CA = process.env.SVC_NATS_CA ?? NATS_FILES.ca;
/** Signs the requests tests send and verifies them in the test systems (never the one in data/secrets.env). */
export const TEST_CONTEXT_KEY = 'test-context-key-test-context-key-0123456789';
export const testSigner = (): ContextSigner => new ContextSigner(TEST_CONTEXT_KEY);

/** What a child process (main.ts, a script) needs to share this run's broker and trust the test systems' requests. */
export const brokerEnv = (): Record<string, string> => ({
  SVC_NATS_URL: NATS_URL,
  SVC_NATS_CREDS: NATS_CREDS,
  SVC_NATS_ISSUER_KEY: process.env.SVC_NATS_ISSUER_KEY ?? NATS_FILES.issuerKey,
  SVC_NATS_OPERATOR_KEY: process.env.SVC_NATS_OPERATOR_KEY ?? NATS_FILES.operatorKey,
  SVC_NATS_SYSTEM_CREDS: process.env.SVC_NATS_SYSTEM_CREDS ?? NATS_FILES.systemCreds,
  SVC_NATS_CA: NATS_CA,
  SVC_CONTEXT_KEY: TEST_CONTEXT_KEY,
});

/** Config for tests: the machine's local services, overridable per test. */
export function testConfig(overrides: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    // npm test's own database (scripts/test.sh), never the one npm start uses.
    SVC_DB_URL: process.env.SVC_DB_URL ?? 'postgresql://postgres@127.0.0.1:5432/svc_test',
    ...brokerEnv(),
    SVC_VALKEY_URL: process.env.SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379',
    SVC_TSDB_URL: process.env.SVC_TSDB_URL ?? 'http://127.0.0.1:8428',
    SVC_ANALYTICS_PATH: process.env.SVC_ANALYTICS_PATH ?? './data/analytics-test',
    SVC_NAMESPACE: process.env.SVC_NAMESPACE ?? '',
    SVC_JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
    SVC_MFA_ENCRYPTION_KEY: '0'.repeat(63) + '1',
    SVC_LOG_LEVEL: process.env.SVC_LOG_LEVEL ?? 'silent',
    SVC_VALIDATE_REPLIES: 'true',
    SVC_SERVER_PORT: '0',
    SVC_INVOICING_PORT: '0',
    ...overrides,
  });
}
