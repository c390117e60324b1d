import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { Stores } from '../../platform/stores/index.ts';
import { analyticsStore } from '../../actors/invoice/mod.ts';
import { brokerEnv, testConfig } from '../support/env.ts';
import { freePort, waitFor } from '../support/processes.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';

/**
 * chDB locks its directory and keeps its data in one process: only the process running the invoice domain opens it.
 * This file's system runs every domain in the test process, so it holds the run's chDB directory while the child
 * processes below (`npm run migrate`, a second invoice instance, a gateway-only process) start beside it.
 */

const log = createLogger('silent');

interface Child {
  exited: Promise<number | null>;
  output: () => string;
  kill: (signal: NodeJS.Signals) => void;
}

/** `node <script>` with this run's environment (same NATS namespace and chDB path) plus `env`. */
function run(script: string, env: Record<string, string>): Child {
  const proc = spawn(process.execPath, [script], {
    env: { ...process.env, ...brokerEnv(), SVC_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return { exited, output: () => out, kill: (signal) => proc.exitCode === null && proc.kill(signal) };
}

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref()),
  ]);

describe('embedded analytics store (chDB) ownership', () => {
  let sys: TestSystem;
  const children: Child[] = [];
  beforeAll(async () => {
    sys = await startTestSystem();
    // The invoice domain applied the analytics DDL itself when it started.
    const applied = await (
      await analyticsStore(sys.stores, sys.config)
    ).query<{ id: string }>('SELECT id FROM schema_migrations FINAL');
    expect(applied.map((r) => r.id)).toContain('0001_schema_migrations');
  });
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await sys?.stop();
  });

  it('refuses chDB to a process that does not run the invoice domain', async () => {
    const stores = new Stores(testConfig({ SVC_ACTORS: 'identity,fleet' }), log);
    try {
      await expect(analyticsStore(stores, testConfig({ SVC_ACTORS: 'identity,fleet' }))).rejects.toThrow(
        /only by the process that runs the invoice domain/,
      );
    } finally {
      await stores.close();
    }
  });

  it('npm run migrate succeeds while the system holds chDB (the analytics DDL is left to the invoice domain)', async () => {
    const child = run('migrations/run.ts', {
      SVC_DB_URL: sys.config.SVC_DB_URL,
      SVC_ANALYTICS_PATH: sys.config.SVC_ANALYTICS_PATH,
    });
    children.push(child);
    expect(await within(child.exited, 30_000, 'migrate exit'), child.output()).toBe(0);
    expect(child.output()).not.toMatch(/Cannot lock file/);
    expect(child.output()).toMatch(/applied by the invoice domain/);
  });

  it('refuses a second invoice instance on chDB with a message naming SVC_CLICKHOUSE_URL, before opening chDB', async () => {
    // A directory of its own, so only the instance check (not the lock of the first one's directory) can refuse it.
    const dir = join(tmpdir(), `chdb-second-${randomUUID().slice(0, 8)}`);
    const child = run('main.ts', {
      SVC_DB_URL: sys.config.SVC_DB_URL,
      SVC_ACTORS: 'invoice',
      SVC_GATEWAYS: 'none',
      SVC_ANALYTICS_PATH: dir,
    });
    children.push(child);
    expect(await within(child.exited, 30_000, 'second instance exit'), child.output()).toBe(1);
    expect(child.output()).toMatch(
      /start-up failed: another invoice actor instance already serves .*set SVC_CLICKHOUSE_URL/,
    );
    expect(existsSync(dir)).toBe(false);
  });

  it('a gateway-only process answers invoicing readiness through the invoice domain without opening chDB', async () => {
    const port = await freePort();
    const dir = join(tmpdir(), `chdb-gateway-${randomUUID().slice(0, 8)}`);
    const child = run('main.ts', {
      SVC_DB_URL: sys.config.SVC_DB_URL,
      SVC_JWT_SECRET: sys.config.SVC_JWT_SECRET!,
      SVC_ACTORS: 'none',
      SVC_GATEWAYS: 'invoicing',
      SVC_INVOICING_PORT: String(port),
      SVC_ANALYTICS_PATH: dir,
    });
    children.push(child);
    let body: unknown;
    await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
        if (res?.status !== 200) return false;
        body = await res.json();
        return true;
      },
      30_000,
      'gateway-only /readyz 200',
      200,
    );
    expect(body).toEqual({ status: 'ready', checks: { relational_store: 'ok', analytics_store: 'ok' } });
    expect(existsSync(dir)).toBe(false);
    child.kill('SIGTERM');
    expect(await within(child.exited, 15_000, 'gateway exit')).toBe(0);
  });
});
