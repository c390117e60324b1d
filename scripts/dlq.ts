import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadConfig } from '../platform/config.ts';
import { listDeadLetters, replayDeadLetters } from '../platform/dlq.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { setNamespace } from '../platform/namespace.ts';
import { connectNats } from '../platform/nats.ts';

/**
 * `npm run dlq -- list <durable>`: the dead letters of a durable consumer (DLQ sequence, subject, reason, error).
 * `npm run dlq -- replay <durable> [dlq-seq ...]`: publishes them (or the ones named) again on their subject and
 * removes them from the DLQ. The broker is the one the environment names (SVC_NATS_URL, SVC_NATS_CREDS, SVC_NAMESPACE).
 */
const USAGE = 'usage: npm run dlq -- list <durable> | replay <durable> [dlq-seq ...]';

export async function dlqCommand(
  nc: NatsConnection,
  args: readonly string[],
  log: Logger,
  print: (line: string) => void,
): Promise<number> {
  const [command, durable, ...rest] = args;
  const seqs = rest.map(Number);
  if (!durable || (command !== 'list' && command !== 'replay') || seqs.some((n) => !Number.isSafeInteger(n) || n < 1)) {
    print(USAGE);
    return 2;
  }
  if (command === 'list') {
    for (const d of await listDeadLetters(nc, durable)) print(JSON.stringify(d));
    return 0;
  }
  const result = await replayDeadLetters(nc, durable, log, seqs.length > 0 ? seqs : undefined);
  print(JSON.stringify(result));
  return result.skipped.length > 0 ? 1 : 0;
}

async function main(): Promise<number> {
  const config = loadConfig();
  setNamespace(config.SVC_NAMESPACE);
  const log = createLogger(config.SVC_LOG_LEVEL, 'dlq');
  const nc = await connectNats(
    config.SVC_NATS_URL,
    `dlq-${process.pid}`,
    log,
    config.SVC_NATS_CREDS,
    config.SVC_NATS_CA,
  );
  try {
    return await dlqCommand(nc, process.argv.slice(2), log, (line) => process.stdout.write(`${line}\n`));
  } catch (err) {
    log.error({ err }, 'dlq command failed');
    return 1;
  } finally {
    await nc.drain();
  }
}

const entry = process.argv[1];
if (entry && import.meta.url === pathToFileURL(realpathSync(entry)).href) {
  process.exitCode = await main();
}
