import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { NATS_FILES } from './env.ts';

/** Helpers for tests that run their own servers (a private nats-server, the whole system as a child process). */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until it holds; fails naming `what` after `timeoutMs`. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  what = 'condition',
  pollMs = 20,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(pollMs);
  }
}

/** A loopback port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * A private nats-server on loopback with the project's broker configuration (operator mode, the same trust chain as
 * the local server, so the service credentials work), its JetStream and account data in `storeDir`, so a test may
 * stop and restart it.
 */
export function startNatsServer(port: number, storeDir: string): ChildProcess {
  mkdirSync(storeDir, { recursive: true });
  copyFileSync(NATS_FILES.serverConfig, join(storeDir, 'nats-server.conf'));
  return spawn('nats-server', ['-c', 'nats-server.conf', '-a', '127.0.0.1', '-p', String(port)], {
    cwd: storeDir,
    stdio: 'ignore',
  });
}

/** SIGTERM, then wait for the exit (no-op when it already exited). */
export async function stopProcess(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill('SIGTERM');
  await exited;
}
