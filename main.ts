import type { NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { selectDomains } from './actors/index.ts';
import type { DomainHandle } from './actors/domain.ts';
import { AccessCache } from './actors/identity/access.ts';
import { AccessTokens } from './actors/identity/crypto.ts';
import { Caller } from './actors/runtime/call.ts';
import { systemClock, type Clock } from './actors/runtime/clock.ts';
import { loadConfig, requireSecrets, type Config } from './actors/runtime/config.ts';
import { ensureStreams } from './actors/runtime/jetstream.ts';
import { onShutdown } from './actors/runtime/lifecycle.ts';
import { createLogger, type Logger } from './actors/runtime/logger.ts';
import { LazyNats } from './actors/runtime/nats.ts';
import { ActorHost } from './actors/runtime/serve.ts';
import { Stores } from './actors/runtime/stores/index.ts';
import { catalogue } from './contracts/catalogue.ts';
import { allStreams } from './contracts/streams.ts';
import { buildConsoleGateway } from './gateway/console/app.ts';
import { buildInvoicingGateway } from './gateway/invoicing/app.ts';
import type { GatewayApp } from './gateway/shared/app.ts';
import { TokenAuthenticator } from './gateway/shared/authenticate.ts';
import type { GatewayDeps } from './gateway/shared/bridge.ts';
import { rateLimitGuard } from './gateway/shared/rate-limit.ts';

export const VERSION: string = (JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')) as { version: string }).version;

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

/** Starts the selected actors and gateways in this process (everything by default). */
export async function startSystem(opts: SystemOptions): Promise<RunningSystem> {
  const { config, log } = opts;
  const clock = opts.clock ?? systemClock;
  const domains = selectDomains(config.SVC_ACTORS);
  const gateways = config.SVC_GATEWAYS.filter((g) => g !== 'none');
  for (const g of gateways) if (g !== 'console' && g !== 'invoicing') throw new Error(`SVC_GATEWAYS: unknown gateway ${g}; known: console, invoicing`);

  const nats = new LazyNats(config.SVC_NATS_URL, `svc-${process.pid}`, log);
  const nc = await nats.ready;
  await ensureStreams(nc, allStreams);
  const stores = new Stores(config, log, opts.kvPrefix ? { keyPrefix: opts.kvPrefix } : {});
  const host = new ActorHost(nc, catalogue, log, config.SVC_REQUEST_TIMEOUT_MS);
  const handles: DomainHandle[] = [];
  for (const d of domains) {
    handles.push(await d.start({ config, log: log.child({ domain: d.name }), nc, host, stores, clock }));
    log.info({ domain: d.name }, 'domain started');
  }

  const running: RunningSystem = { nc, stores, host, caller: host.caller, stop: async () => undefined };
  const closers: (() => Promise<void>)[] = [];
  if (gateways.length > 0) {
    const { SVC_JWT_SECRET } = requireSecrets(config, ['SVC_JWT_SECRET']);
    const caller = new Caller(() => nats.current, catalogue, config.SVC_REQUEST_TIMEOUT_MS);
    const kv = await stores.kv();
    const deps: GatewayDeps = {
      caller,
      requestTimeoutMs: config.SVC_REQUEST_TIMEOUT_MS,
      // Verified on the same clock the identity actors sign with, so expiry is one notion of time everywhere.
      auth: new TokenAuthenticator(new AccessTokens(SVC_JWT_SECRET, config.SVC_JWT_ACCESS_TTL, () => clock.now()), caller, new AccessCache(kv), () => clock.now()),
      guard: rateLimitGuard(kv, { auth: config.SVC_AUTH_RATE_LIMIT, api: config.SVC_API_RATE_LIMIT }, (err) => log.warn({ err }, 'rate limiter unavailable')),
    };
    if (gateways.includes('console')) {
      const gw = await buildConsoleGateway({ config, log: log.child({ gateway: 'console' }), nats, deps, version: VERSION });
      running.console = gw.app;
      closers.push(async () => {
        await gw.app.close();
        await gw.close();
      });
      if (opts.listen !== false) await gw.app.listen({ host: config.SVC_SERVER_BIND, port: config.SVC_SERVER_PORT });
    }
    if (gateways.includes('invoicing')) {
      const gw = await buildInvoicingGateway({ config, log: log.child({ gateway: 'invoicing' }), deps, version: VERSION });
      running.invoicing = gw.app;
      closers.push(async () => {
        await gw.app.close();
        await gw.close();
      });
      if (opts.listen !== false) await gw.app.listen({ host: config.SVC_SERVER_BIND, port: config.SVC_INVOICING_PORT });
    }
  }

  running.stop = async () => {
    // Gateways first (stop accepting, finish in-flight HTTP), then actors (finish in-flight requests), then stores.
    await Promise.all(closers.map((c) => c()));
    await host.drain();
    await Promise.all(handles.map((h) => h.stop()));
    await nats.close();
    await stores.close();
  };
  return running;
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const log = createLogger(config.SVC_LOG_LEVEL);
  try {
    const system = await startSystem({ config, log });
    onShutdown(log, () => system.stop());
    log.info(
      { version: VERSION, actors: config.SVC_ACTORS, gateways: config.SVC_GATEWAYS, console: system.console?.server.address(), invoicing: system.invoicing?.server.address() },
      'system started',
    );
  } catch (err) {
    log.fatal({ err }, 'start-up failed');
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
