import type { Logger } from './logger.ts';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits: 0 when it finished, 1 when it failed or took longer than
 * `timeoutMs` (a stuck drain must not keep a replaced instance alive forever).
 */
export function onShutdown(log: Logger, stop: () => Promise<void>, timeoutMs = 25_000): void {
  let started = false;
  const handler = (signal: NodeJS.Signals): void => {
    if (started) return;
    started = true;
    log.info({ signal }, 'shutting down: no new work, finishing in-flight requests');
    setTimeout(() => {
      log.error('shutdown timed out');
      process.exit(1);
    }, timeoutMs).unref();
    stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}
