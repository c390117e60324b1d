import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { brokerEnv } from './env.ts';
import { freePort, waitFor } from './processes.ts';

export interface Child {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** A process in a group of its own, so the whole group (anything it started) can be ended. */
export function spawnGroup(command: string, args: string[], env: Record<string, string>): Child {
  const proc = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((done) => proc.once('exit', (code) => done(code)));
  return { proc, output: () => out, exited };
}

/** SIGTERM to the whole group, SIGKILL to what is left after `graceMs`. */
export async function endGroup(child: Child | undefined, graceMs = 15_000): Promise<void> {
  if (!child?.proc.pid) return;
  const pgid = child.proc.pid;
  const alive = (): boolean => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!alive()) return;
  process.kill(-pgid, 'SIGTERM');
  await waitFor(() => !alive(), graceMs, `process group ${pgid} to exit`, 100).catch(() => {
    if (alive()) process.kill(-pgid, 'SIGKILL');
  });
}

export interface SystemProcess {
  child: Child;
  consoleUrl: string;
  invoicingUrl: string;
  /** The chDB directory of its own, removed by the caller when done. */
  analyticsPath: string;
}

/**
 * The whole system as `npm start` runs it (main.ts in a process of its own, on real ports of its own), on this run's
 * test stores and broker, once both gateways answer /readyz. `env` adds to or replaces its settings.
 */
export async function startSystemProcess(
  tag: string,
  env: Record<string, string> = {},
  /** A console port chosen ahead, when a peer must know the console's address before it starts (an SSO redirect). */
  opts: { consolePort?: number } = {},
): Promise<SystemProcess> {
  const [consolePort, invoicingPort] = [opts.consolePort ?? (await freePort()), await freePort()];
  const consoleUrl = `http://localhost:${consolePort}`;
  const invoicingUrl = `http://localhost:${invoicingPort}`;
  const analyticsPath = `${resolve(process.env.SVC_ANALYTICS_PATH ?? './data/analytics-test')}-${tag}`;
  const child = spawnGroup(process.execPath, ['main.ts'], {
    ...brokerEnv(),
    SVC_SERVER_PORT: String(consolePort),
    SVC_INVOICING_PORT: String(invoicingPort),
    SVC_BACKEND_URL: consoleUrl,
    SVC_INVOICING_PUBLIC_URL: invoicingUrl,
    SVC_ANALYTICS_PATH: analyticsPath,
    // Other runs share this machine's Valkey and loopback address: their logins must not use up this one's budget.
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_LOG_LEVEL: 'warn',
    ...env,
  });
  const ready = async (url: string): Promise<boolean> =>
    (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
  await waitFor(
    async () => {
      if (child.proc.exitCode !== null) throw new Error(`the system exited ${child.proc.exitCode}:\n${child.output()}`);
      return (await ready(consoleUrl)) && (await ready(invoicingUrl));
    },
    120_000,
    'the system to be ready',
    250,
  );
  return { child, consoleUrl, invoicingUrl, analyticsPath };
}
