import type { NatsConnection } from '@nats-io/transport-node';
import { accessSync, constants as fsConstants } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { allEntities, selectDomains } from './actors/index.ts';
import type { DomainHandle, DomainModule } from './platform/domain.ts';
import { eventsSecretBox } from './actors/events/mod.ts';
import { AccessCache, AccessTokens } from './actors/identity/mod.ts';
import { Caller } from './platform/call.ts';
import { systemClock, type Clock } from './platform/clock.ts';
import { ConfigError, loadConfig, requireSecrets, unknownVariables, type Config } from './platform/config.ts';
import { ensureStreams } from './platform/jetstream.ts';
import { onShutdown } from './platform/lifecycle.ts';
import { createLogger, type Logger } from './platform/logger.ts';
import { setNamespace } from './platform/namespace.ts';
import { setBrokerReplicas } from './platform/replicas.ts';
import { LazyNats } from './platform/nats.ts';
import { ActorHost } from './platform/serve.ts';
import { contextSigner } from './platform/signing.ts';
import { Stores } from './platform/stores/index.ts';
import { catalogue } from './contracts/catalogue.ts';
import { VERSION } from './contracts/version.ts';
import { allStreams } from './contracts/streams.ts';
import { buildConsoleGateway } from './gateway/console/app.ts';
import { buildInvoicingGateway } from './gateway/invoicing/app.ts';
import type { GatewayApp } from './gateway/shared/app.ts';
import { TokenAuthenticator } from './gateway/shared/authenticate.ts';
import type { GatewayDeps } from './gateway/shared/bridge.ts';
import { BrokerBreaker } from './gateway/shared/broker-breaker.ts';
import { rateLimitGuard } from './gateway/shared/rate-limit.ts';

export { VERSION };

export interface SystemOptions {
  config: Config;
  log: Logger;
  clock?: Clock;
  /** Key prefix in Valkey; tests isolate runs with their own. */
  kvPrefix?: string;
  /** Listen on the configured ports (default); tests may use `inject` only. */
  listen?: boolean;
}

export interface RunningSystem {
  console?: GatewayApp;
  invoicing?: GatewayApp;
  nc: NatsConnection;
  stores: Stores;
  host: ActorHost<typeof catalogue>;
  caller: Caller<typeof catalogue>;
  stop(): Promise<void>;
}

/** Names of the gateways SVC_GATEWAYS may select. */
const GATEWAYS = ['console', 'invoicing'] as const;

/**
 * Checks SVC_ACTORS, SVC_GATEWAYS and the secrets that selection needs before anything starts: a wrong name or a
 * missing secret is a configuration error naming the variable.
 */
export function selectProcess(config: Config): { domains: DomainModule[]; gateways: string[] } {
  let domains: DomainModule[];
  try {
    domains = selectDomains(config.SVC_ACTORS);
  } catch (err) {
    throw new ConfigError(`invalid configuration:\n  ${err instanceof Error ? err.message : String(err)}`);
  }
  const gateways = config.SVC_GATEWAYS.filter((g) => g !== 'none');
  const unknown = gateways.filter((g) => !(GATEWAYS as readonly string[]).includes(g));
  if (unknown.length > 0)
    throw new ConfigError(
      `invalid configuration:\n  SVC_GATEWAYS: unknown gateway(s) ${unknown.join(', ')}; known: ${GATEWAYS.join(', ')}, none`,
    );
  // Secrets this selection needs, checked before anything connects (identity checks its own again when it starts).
  if (domains.some((d) => d.name === 'identity')) requireSecrets(config, ['SVC_JWT_SECRET', 'SVC_MFA_ENCRYPTION_KEY']);
  // The events domain seals webhook secrets with its own key, or one derived from identity's.
  if (domains.some((d) => d.name === 'events')) eventsSecretBox(config);
  else if (gateways.length > 0) requireSecrets(config, ['SVC_JWT_SECRET']);
  // Every request between services is signed: whoever runs an actor or a gateway holds the context key.
  requireSecrets(config, ['SVC_CONTEXT_KEY']);
  for (const name of [
    'SVC_NATS_CREDS',
    'SVC_NATS_ISSUER_KEY',
    'SVC_NATS_OPERATOR_KEY',
    'SVC_NATS_SYSTEM_CREDS',
    'SVC_NATS_CA',
  ] as const) {
    const path = config[name];
    if (path === undefined) continue;
    try {
      accessSync(path, fsConstants.R_OK);
    } catch {
      throw new ConfigError(`invalid configuration:\n  ${name}: cannot read ${path}`);
    }
  }
  return { domains, gateways };
}

/**
 * Starts the selected actors and gateways in this process (everything by default). On failure whatever was already
 * started is stopped again before the error is rethrown, so a caller (a test, a supervisor loop) is left clean.
 */
export async function startSystem(opts: SystemOptions): Promise<RunningSystem> {
  const { config, log } = opts;
  const clock = opts.clock ?? systemClock;
  const { domains, gateways } = selectProcess(config);

  const signer = contextSigner(config);
  const nats = new LazyNats(config.SVC_NATS_URL, `svc-${process.pid}`, log, config.SVC_NATS_CREDS, config.SVC_NATS_CA);
  const stores = new Stores(config, log, {
    entities: allEntities,
    ...(opts.kvPrefix ? { keyPrefix: opts.kvPrefix } : {}),
  });
  const handles: DomainHandle[] = [];
  const closers: (() => Promise<void>)[] = [];
  let host: ActorHost<typeof catalogue> | undefined;

  const step = async (what: string, fn: () => Promise<unknown>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      log.error({ err }, `shutdown: ${what} failed`);
    }
  };
  // Each phase finishes before the next, and a failing step does not stop the ones after it.
  const shutdown = async (): Promise<void> => {
    // 1. Gateways stop accepting and finish in-flight HTTP requests (whose calls still reach the actors below).
    await Promise.all(closers.map((c) => step('gateway close', c)));
    // 2. Actors stop taking requests and finish those in flight; then each domain ends its consumers and timers.
    if (host) await step('actor drain', () => host!.drain());
    await Promise.all(handles.map((h) => step('domain stop', () => h.stop())));
    // 3. The broker connection drains (pending publishes and acks go out), then the stores close.
    await step('nats close', () => nats.close());
    await step('stores close', () => stores.close());
  };

  try {
    const nc = await nats.ready;
    await ensureStreams(nc, allStreams);
    const actorHost = new ActorHost(
      nc,
      catalogue,
      signer,
      log,
      config.SVC_REQUEST_TIMEOUT_MS,
      config.SVC_VALIDATE_REPLIES,
    );
    host = actorHost;
    for (const d of domains) {
      handles.push(await d.start({ config, log: log.child({ domain: d.name }), nc, host: actorHost, stores, clock }));
      log.info({ domain: d.name }, 'domain started');
    }

    const running: RunningSystem = {
      nc,
      stores,
      host: actorHost,
      caller: actorHost.caller,
      stop: async () => undefined,
    };
    if (gateways.length > 0) {
      const { SVC_JWT_SECRET } = requireSecrets(config, ['SVC_JWT_SECRET']);
      const caller = new Caller(() => nats.current, catalogue, signer, config.SVC_REQUEST_TIMEOUT_MS);
      const kv = await stores.kv();
      // One broker health check for both gateways of this process; it stops with them.
      const breaker = new BrokerBreaker(async (ms) => (nats.current ? nats.healthy(ms) : 'reconnecting'), {
        log: log.child({ component: 'broker-breaker' }),
      }).start();
      // A reconnect (to another node, after a silent one was left) is probed at once, not at the next interval.
      nats.onReconnect(() => void breaker.check());
      closers.push(async () => breaker.stop());
      const deps: GatewayDeps = {
        breaker,
        caller,
        requestTimeoutMs: config.SVC_REQUEST_TIMEOUT_MS,
        // Verified on the same clock the identity actors sign with, so expiry is one notion of time everywhere.
        auth: new TokenAuthenticator(
          new AccessTokens(SVC_JWT_SECRET, config.SVC_JWT_ACCESS_TTL, () => clock.now()),
          caller,
          new AccessCache(await stores.kvReads()),
          () => clock.now(),
        ),
        idempotency: kv,
        guard: rateLimitGuard(
          kv,
          { auth: config.SVC_AUTH_RATE_LIMIT, api: config.SVC_API_RATE_LIMIT },
          onceEvery(10_000, (err) => log.warn({ err }, 'rate limiter unavailable; requests pass unlimited')),
        ),
      };
      if (gateways.includes('console')) {
        const gw = await buildConsoleGateway({
          config,
          log: log.child({ gateway: 'console' }),
          nats,
          deps,
          version: VERSION,
        });
        running.console = gw.app;
        closers.push(async () => {
          await gw.app.close();
          await gw.close();
        });
        if (opts.listen !== false) {
          await gw.app.listen({ host: config.SVC_SERVER_BIND, port: config.SVC_SERVER_PORT });
          log.info({ url: config.SVC_BACKEND_URL }, `the web console: open ${config.SVC_BACKEND_URL} in a browser`);
        }
      }
      if (gateways.includes('invoicing')) {
        const gw = await buildInvoicingGateway({
          config,
          log: log.child({ gateway: 'invoicing' }),
          deps,
          version: VERSION,
        });
        running.invoicing = gw.app;
        closers.push(async () => {
          await gw.app.close();
          await gw.close();
        });
        if (opts.listen !== false)
          await gw.app.listen({ host: config.SVC_SERVER_BIND, port: config.SVC_INVOICING_PORT });
      }
    }
    let stopping: Promise<void> | undefined;
    running.stop = () => (stopping ??= shutdown());
    return running;
  } catch (err) {
    await shutdown();
    throw err;
  }
}

/** Calls `fn` at most once per `ms`: one log line per outage period, not one per request. */
function onceEvery<A extends unknown[]>(ms: number, fn: (...args: A) => void): (...args: A) => void {
  let last = 0;
  return (...args) => {
    const now = Date.now();
    if (now - last < ms) return;
    last = now;
    fn(...args);
  };
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
    selectProcess(config);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
  setNamespace(config.SVC_NAMESPACE);
  setBrokerReplicas(config.SVC_NATS_REPLICAS);
  const log = createLogger(config.SVC_LOG_LEVEL);
  const unknown = unknownVariables();
  if (unknown.length > 0)
    log.warn(
      { variables: unknown },
      `ignoring unknown variable(s) ${unknown.join(', ')}: nothing reads them (a typo?)`,
    );
  const starting = startSystem({ config, log });
  // Before start-up finishes: a signal then stops whatever has started (a failed start-up has stopped it already).
  onShutdown(log, async () => (await starting.catch(() => undefined))?.stop());
  try {
    const system = await starting;
    log.info(
      {
        version: VERSION,
        node: process.version,
        actors: config.SVC_ACTORS,
        gateways: config.SVC_GATEWAYS,
        console: system.console?.server.address(),
        invoicing: system.invoicing?.server.address(),
      },
      'system started',
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.fatal({ err }, `start-up failed: ${message}`);
    // Also on stderr without the JSON around it, for whoever reads a crash loop's output.
    process.stderr.write(`start-up failed: ${message}\n`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
