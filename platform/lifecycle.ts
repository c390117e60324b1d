import type { Logger } from './logger.ts';

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * A signal repeated within this window is the same request, not an order to hurry: `npm start` forwards the
 * SIGTERM/SIGINT its process group got to this process, which got the same signal itself.
 */
export const REPEAT_WINDOW_MS = 2_000;

/**
 * Runs `stop` once on SIGTERM, SIGINT or SIGHUP, then exits: 0 when it finished, 1 when it failed or took longer than
 * `timeoutMs` (a stuck drain must not keep a replaced instance alive forever). The listeners stay for the whole
 * shutdown: with none left, a second signal would kill the process at once, with no 'exit' event, and leave the
 * browser it started behind (killGroupOnExit). A second signal after REPEAT_WINDOW_MS exits at once (exit code 1);
 * an uncaught error exits 1 likewise. Installed before start-up, so a signal then waits for `stop`, not the kernel.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>, timeoutMs = 25_000): void {
  let startedAt: number | undefined;
  const handler = (signal: NodeJS.Signals): void => {
    if (startedAt !== undefined) {
      if (Date.now() - startedAt < REPEAT_WINDOW_MS) {
        log.info({ signal }, 'already shutting down');
        return;
      }
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    startedAt = Date.now();
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
  for (const signal of SIGNALS) process.on(signal, handler);
  // Node's default for an uncaught error ends the process without an 'exit' event; this one has it.
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught error: exiting');
    process.exit(1);
  });
}
