import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { ManualClock } from '../../platform/clock.ts';
import type { Config } from '../../platform/config.ts';
import { createLogger, type Logger } from '../../platform/logger.ts';
import { runMigrations } from '../../migrations/run.ts';
import { startSystem, type RunningSystem } from '../../main.ts';
import { testConfig } from './env.ts';

export interface TestSystem extends RunningSystem {
  config: Config;
  clock: ManualClock;
  /** Unique per system, for data that must not collide with other runs (e-mails, names, slugs). */
  tag: string;
  /** HTTP against the console gateway. */
  http(opts: InjectOptions & { token?: string; apiKey?: string }): Promise<LightMyRequestResponse>;
  /** HTTP against the invoicing gateway. */
  invoicingHttp(opts: InjectOptions & { token?: string }): Promise<LightMyRequestResponse>;
  /** Rows straight from PostgreSQL (`?` placeholders): test set-up, and effects the API does not show. */
  sql<T>(query: string, params?: unknown[]): Promise<T[]>;
}

let migrated = false;

/**
 * Starts the whole system in this process (every actor, both gateways via inject) with a clock the test moves.
 * Rate limits are high unless the test sets them; keys in Valkey get a per-run prefix so runs never interfere.
 */
/**
 * `overrides`: a value replaces the test default; `undefined` leaves the variable unset (e.g. an unconfigured feature).
 * `opts.log`: the system logs there instead (a test that checks what was logged).
 */
export async function startTestSystem(
  overrides: Record<string, string | undefined> = {},
  opts: { log?: Logger } = {},
): Promise<TestSystem> {
  const config = testConfig({ SVC_AUTH_RATE_LIMIT: '100000', SVC_API_RATE_LIMIT: '100000', ...overrides });
  const log = opts.log ?? createLogger(config.SVC_LOG_LEVEL);
  if (!migrated) {
    await runMigrations(config, log);
    migrated = true;
  }
  const clock = new ManualClock(Date.now());
  const tag = randomUUID().slice(0, 8);
  const system = await startSystem({ config, log, clock, kvPrefix: `svc-test:${tag}:`, listen: false });
  const withAuth = (opts: InjectOptions & { token?: string; apiKey?: string }): InjectOptions => {
    const { token, apiKey, ...rest } = opts;
    const headers: Record<string, string> = { ...(rest.headers as Record<string, string> | undefined) };
    if (token) headers.authorization = `Bearer ${token}`;
    if (apiKey) headers['x-api-key'] = apiKey;
    return { ...rest, headers };
  };
  return {
    ...system,
    config,
    clock,
    tag,
    http: (opts) => {
      if (!system.console) throw new Error('console gateway not running');
      return system.console.inject(withAuth(opts));
    },
    invoicingHttp: (opts) => {
      if (!system.invoicing) throw new Error('invoicing gateway not running');
      return system.invoicing.inject(withAuth(opts));
    },
    sql: async <T>(query: string, params: unknown[] = []): Promise<T[]> =>
      (await system.stores.orm()).em.fork().getConnection().execute<T[]>(query, params),
  };
}

/** The error member of an error envelope. */
export const errorOf = (res: LightMyRequestResponse): { code: string; message: string; request_id: string } =>
  (res.json() as { error: { code: string; message: string; request_id: string } }).error;
