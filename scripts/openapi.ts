/**
 * `npm run openapi -- <dir>`: writes the OpenAPI documents of both gateways (console.json, invoicing.json) into <dir>,
 * built offline (no broker, no store is reached) from the same routes the running gateways serve at `/swagger/json`.
 * Reads the same SVC_* variables as the services, so `servers` names the configured public URLs.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Caller } from '../platform/call.ts';
import { loadConfig, type Config } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { ContextSigner } from '../platform/signing.ts';
import { catalogue } from '../contracts/catalogue.ts';
import { VERSION } from '../main.ts';
import { DomainError } from '../contracts/errors.ts';
import { buildConsoleGateway } from '../gateway/console/app.ts';
import { buildInvoicingGateway } from '../gateway/invoicing/app.ts';
import type { GatewayApp } from '../gateway/shared/app.ts';
import type { GatewayDeps } from '../gateway/shared/bridge.ts';

export interface OpenApiDocuments {
  console: Record<string, unknown>;
  invoicing: Record<string, unknown>;
}

const offline = (): Promise<never> =>
  Promise.reject(new DomainError('unavailable', 'offline: built for its OpenAPI document only'));

/** Both documents, from gateways built with the debug endpoints on and nothing behind them. */
export async function buildOpenApiDocuments(config: Config): Promise<OpenApiDocuments> {
  const log = createLogger('silent');
  const cfg: Config = { ...config, SVC_ENABLE_DEBUG_ENDPOINTS: true };
  // Nothing is ever called: a document is built from the routes' schemas. A call would find no connection.
  const deps: GatewayDeps = {
    caller: new Caller(
      () => undefined,
      catalogue,
      new ContextSigner('offline-document-build-offline-document-build'),
      1000,
    ),
    auth: { authenticate: offline },
    requestTimeoutMs: 1000,
  };
  const ready = offline();
  ready.catch(() => undefined);
  const documentOf = async (gw: { app: GatewayApp; close: () => Promise<void> }): Promise<Record<string, unknown>> => {
    try {
      await gw.app.ready();
      return gw.app.swagger() as unknown as Record<string, unknown>;
    } finally {
      await gw.app.close();
      await gw.close();
    }
  };
  return {
    console: await documentOf(
      await buildConsoleGateway({
        config: cfg,
        log,
        nats: { ready, healthy: async () => false },
        deps,
        version: VERSION,
      }),
    ),
    invoicing: await documentOf(await buildInvoicingGateway({ config: cfg, log, deps, version: VERSION })),
  };
}

async function main(dir: string | undefined): Promise<void> {
  if (!dir) throw new Error('usage: npm run openapi -- <output directory>');
  // Only the public URLs and the routes' switches matter here; the database is never reached.
  const config = loadConfig({ SVC_DB_URL: 'postgresql://offline@127.0.0.1:1/offline', ...process.env });
  const docs = await buildOpenApiDocuments(config);
  mkdirSync(dir, { recursive: true });
  for (const [name, doc] of Object.entries(docs))
    writeFileSync(join(dir, `${name}.json`), `${JSON.stringify(doc, null, 2)}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv[2]).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
