import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokerEnv } from '../support/env.ts';
import { freePort, waitFor } from '../support/processes.ts';
import { tourScript } from './readme.ts';

/**
 * README.md's five-minute tour, as a newcomer pastes it: its ```sh blocks, in order, in one bash, against the whole
 * system started as `npm start` starts it (main.ts in a process of its own, listening on real ports). The tour's own
 * variables (CONSOLE, ADMIN_PASSWORD, …) point it at this system; nothing else of it is changed.
 */

const TOUR_MS = 300_000;

interface Child {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** A process in a group of its own, so the group (the agent the tour leaves running in the background) can be ended. */
function start(command: string, args: string[], env: Record<string, string>): Child {
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
async function endGroup(child: Child | undefined, graceMs = 15_000): Promise<void> {
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

/** Processes whose command line mentions `text` (the tour's agent: its state directory is unique to this run). */
function processesWith(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // It exited meanwhile.
    }
  }
  return pids;
}

const tag = randomBytes(4).toString('hex');
const adminEmail = `tour-${tag}@example.com`;
const adminPassword = `Tour-${randomBytes(12).toString('hex')}`;
const analyticsPath = `${resolve(process.env.SVC_ANALYTICS_PATH ?? './data/analytics-test')}-tour-${tag}`;
let agentDir: string;
let consoleUrl: string;
let invoicingUrl: string;
let system: Child | undefined;
let tour: Child | undefined;

beforeAll(async () => {
  const [consolePort, invoicingPort] = [await freePort(), await freePort()];
  consoleUrl = `http://localhost:${consolePort}`;
  invoicingUrl = `http://localhost:${invoicingPort}`;
  agentDir = join(mkdtempSync(join(tmpdir(), 'tour-')), 'agent');
  system = start(process.execPath, ['main.ts'], {
    ...brokerEnv(),
    SVC_SERVER_PORT: String(consolePort),
    SVC_INVOICING_PORT: String(invoicingPort),
    SVC_ANALYTICS_PATH: analyticsPath,
    SVC_ADMIN_EMAIL: adminEmail,
    SVC_ADMIN_PASSWORD: adminPassword,
    // Other runs share this machine's Valkey and loopback address: their logins must not use up the tour's budget.
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_LOG_LEVEL: 'warn',
  });
  const ready = async (url: string): Promise<boolean> =>
    (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200;
  await waitFor(
    async () => {
      if (system!.proc.exitCode !== null)
        throw new Error(`the system exited ${system!.proc.exitCode}:\n${system!.output()}`);
      return (await ready(consoleUrl)) && (await ready(invoicingUrl));
    },
    120_000,
    'the system to be ready',
    250,
  );
}, 180_000);

afterAll(async () => {
  await endGroup(tour);
  // The tour stops its agent itself (its last block); whatever a failed run left behind goes here.
  if (agentDir) for (const pid of processesWith(agentDir)) process.kill(pid, 'SIGKILL');
  await endGroup(system, 30_000);
  rmSync(analyticsPath, { recursive: true, force: true });
  if (agentDir) rmSync(join(agentDir, '..'), { recursive: true, force: true });
}, 60_000);

describe('the README tour', () => {
  it(
    'runs as written against a started system',
    async () => {
      const script = tourScript(readFileSync('README.md', 'utf8'));
      tour = start('bash', ['-x', '-euo', 'pipefail', '-c', script], {
        ...brokerEnv(),
        CONSOLE: consoleUrl,
        INVOICING: invoicingUrl,
        ADMIN_EMAIL: adminEmail,
        ADMIN_PASSWORD: adminPassword,
        SLUG: `tour-${tag}`,
        AGENT_DIR: agentDir,
        SVC_LOG_LEVEL: 'warn',
      });
      const code = await Promise.race([
        tour.exited,
        new Promise<'timeout'>((done) => setTimeout(() => done('timeout'), TOUR_MS).unref()),
      ]);
      const out = tour.output();
      expect(code, out).toBe(0);
      // What each step shows: the signed-in admin, the host online, a chart bucket, the search hit, the preview.
      // `kill $AGENT_PID`, the tour's last command, stopped the agent (npm passes the signal on to it).
      await waitFor(() => processesWith(agentDir).length === 0, 30_000, 'the agent to stop', 200);
      const lines = out.split('\n');
      expect(out).toMatch(new RegExp(`"email":"${adminEmail}".*"mfa_enabled":true`));
      expect(out).toMatch(/"agent_status":"online"/);
      expect(out).toMatch(/^\S+T\S+Z avg \d+\.\d% max \d+\.\d%$/m);
      expect(
        lines.some((line) => line.startsWith(`${hostname()} `) && line.endsWith(' online')),
        out,
      ).toBe(true);
      expect(out).toMatch(
        /"application":"[^"]+","period":"\d{4}-\d\d-\d\d\.\.\d{4}-\d\d-\d\d","currency":"[A-Z]{3}","total_hours":"\d+\.\d+","total_amount":"\d+\.\d\d","lines":[1-9]\d*/,
      );
    },
    TOUR_MS + 30_000,
  );
});
