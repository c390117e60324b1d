import { jetstreamManager } from '@nats-io/jetstream';
import { rm } from 'node:fs/promises';
import { createLogger } from '../platform/logger.ts';
import { connectNats } from '../platform/nats.ts';
import { NATS_ADMIN_CREDS, NATS_CA, NATS_URL } from './support/env.ts';

/**
 * When the run ends: removes this run's private analytics directory (see vitest.config.ts) and what the run left on
 * the shared NATS server under its namespace (durable consumers named `<durable>-<ns>`, lease and upload buckets `…_<ns>`), so
 * runs do not pile up consumers that would each keep a copy of every telemetry message pending.
 */
export default function setup(): () => Promise<void> {
  return async () => {
    const path = process.env.SVC_ANALYTICS_PATH;
    if (path && path.includes('/runs/')) await rm(path, { recursive: true, force: true });
    const ns = process.env.SVC_NAMESPACE;
    if (!ns) return;
    const nc = await connectNats(NATS_URL, 'test-teardown', createLogger('silent'), NATS_ADMIN_CREDS, NATS_CA).catch(
      () => undefined,
    );
    if (!nc) return;
    try {
      const jsm = await jetstreamManager(nc);
      for await (const stream of jsm.streams.list()) {
        const name = stream.config.name;
        if ((name.startsWith('KV_') || name.startsWith('OBJ_')) && name.endsWith(`_${ns}`)) {
          await jsm.streams.delete(name).catch(() => undefined);
          continue;
        }
        for await (const c of jsm.consumers.list(name)) {
          if (c.name.endsWith(`-${ns}`)) await jsm.consumers.delete(name, c.name).catch(() => undefined);
        }
      }
    } finally {
      await nc.close();
    }
  };
}
