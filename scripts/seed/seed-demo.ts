import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { INGEST_DURABLE, INGEST_SUBJECT } from '../../actors/invoice/analytics/ingest.ts';
import { loadConfig } from '../../platform/config.ts';
import { publishDurable } from '../../platform/jetstream.ts';
import { createLogger, type Logger } from '../../platform/logger.ts';
import { namespace, setNamespace, wireDurableName } from '../../platform/namespace.ts';
import { countServingInstances } from '../../actors/invoice/analytics/owner.ts';
import { demoBatches, type DemoOptions } from './demo-data.ts';

/**
 * `npm run seed:demo`: loads the demo data set through the ingest path other systems use — batches published on the
 * JetStream work subject svc.work.invoice.analytics_ingest, stored by the invoice domain's consumer — and waits until
 * the consumer has stored them all. Re-running it replaces rows by their ids, it never duplicates.
 *
 * chDB is held by the process running the invoice domain, so this command never opens it. When no invoice domain
 * serves the system (nothing started), it runs the invoice domain itself in this process for the duration.
 */

export interface SeedReport {
  batches: number;
  worklogs: number;
  ms: number;
}

export async function seedDemo(
  nc: NatsConnection,
  opts: DemoOptions & { waitMs?: number },
  log: Logger,
): Promise<SeedReport> {
  const started = Date.now();
  const batches = demoBatches(opts);
  let worklogs = 0;
  // Publishes in small windows: each waits for the stream's ack (durable before we count it as sent).
  const WINDOW = 8;
  for (let i = 0; i < batches.length; i += WINDOW) {
    await Promise.all(
      batches.slice(i, i + WINDOW).map((b) => {
        worklogs += b.worklogs?.length ?? 0;
        // The msg id dedups a publish retried within the stream's window (ids are per stream, so it names the namespace
        // that shares the broker); the store dedups everything else.
        return publishDurable(nc, INGEST_SUBJECT, b, {
          msgId: `${namespace() || '-'}:${b.batch_id}:${opts.today}`,
          timeoutMs: 30_000,
        });
      }),
    );
  }
  log.info(
    { batches: batches.length, worklogs },
    'demo batches published; waiting for the invoice domain to store them',
  );
  await waitForIngest(nc, opts.waitMs ?? 300_000);
  return { batches: batches.length, worklogs, ms: Date.now() - started };
}

/** Waits until the ingest consumer has nothing pending or unacknowledged. */
export async function waitForIngest(nc: NatsConnection, waitMs: number): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const deadline = Date.now() + waitMs;
  for (;;) {
    const info = await jsm.consumers.info('SVC_WORK', wireDurableName(INGEST_DURABLE));
    if (info.num_pending === 0 && info.num_ack_pending === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `ingest not finished after ${waitMs} ms: ${info.num_pending} batches pending, ${info.num_ack_pending} in progress`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<number> {
  const config = loadConfig();
  setNamespace(config.SVC_NAMESPACE);
  const log = createLogger(config.SVC_LOG_LEVEL, 'seed-demo');
  // Imported here so a test importing seedDemo does not load the whole system.
  const { startSystem } = await import('../../main.ts');
  const { LazyNats } = await import('../../platform/nats.ts');
  const nats = new LazyNats(
    config.SVC_NATS_URL,
    `seed-demo-${process.pid}`,
    log,
    config.SVC_NATS_CREDS,
    config.SVC_NATS_CA,
  );
  let system: { stop(): Promise<void> } | undefined;
  try {
    const nc = await nats.ready;
    if ((await countServingInstances(nc, 'invoice-health', 'svc.invoice.health')) === 0) {
      log.info('no invoice domain serves this system: running it in this process while seeding');
      system = await startSystem({ config: { ...config, SVC_ACTORS: ['invoice'], SVC_GATEWAYS: ['none'] }, log });
    }
    const report = await seedDemo(nc, { today: new Date().toISOString().slice(0, 10) }, log);
    log.info(report, 'demo data stored');
    return 0;
  } catch (err) {
    log.error({ err }, 'seed failed');
    return 1;
  } finally {
    await system?.stop();
    await nats.close();
  }
}

const entry = process.argv[1];
if (entry && import.meta.url === pathToFileURL(realpathSync(entry)).href) {
  process.exitCode = await main();
}
