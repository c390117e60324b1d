import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { LazyNats } from '../../platform/nats.ts';
import { NATS_CA, NATS_CREDS } from '../support/env.ts';
import { freePort, startNatsServer, stopProcess, waitFor } from '../support/processes.ts';

// The gateway's breaker probes on this signal (main.ts), so a failover closes it on the new connection at once.
it('tells its listeners each time the connection is back after a loss, not on the first connect', async () => {
  const port = await freePort();
  const storeDir = await mkdtemp(join(tmpdir(), 'lazy-nats-'));
  let server = startNatsServer(port, storeDir);
  const nats = new LazyNats(
    `nats://127.0.0.1:${port}`,
    'lazy-reconnect-test',
    createLogger('silent'),
    NATS_CREDS,
    NATS_CA,
  );
  let reconnects = 0;
  nats.onReconnect(() => reconnects++);
  try {
    await nats.ready;
    expect(reconnects).toBe(0);
    await stopProcess(server);
    await waitFor(() => nats.current === undefined, 10_000, 'the loss to be noticed');
    server = startNatsServer(port, storeDir);
    await waitFor(() => reconnects === 1, 15_000, 'the reconnect to be told');
    expect(nats.current).toBeDefined();
  } finally {
    await nats.close();
    await stopProcess(server);
    await rm(storeDir, { recursive: true, force: true });
  }
}, 60_000);
