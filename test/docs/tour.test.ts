import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokerEnv } from '../support/env.ts';
import { waitFor } from '../support/processes.ts';
import { endGroup, spawnGroup, startSystemProcess, type Child } from '../support/system-process.ts';
import { tourScript } from './readme.ts';

/**
 * README.md's five-minute tour, as a newcomer pastes it: its ```sh blocks, in order, in one bash, against the whole
 * system started as `npm start` starts it (main.ts in a process of its own, listening on real ports). The tour's own
 * variables (CONSOLE, ADMIN_PASSWORD, …) point it at this system; nothing else of it is changed.
 */

const TOUR_MS = 300_000;

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
let analyticsPath: string | undefined;
let agentDir: string;
let consoleUrl: string;
let invoicingUrl: string;
let system: Child | undefined;
let tour: Child | undefined;

beforeAll(async () => {
  agentDir = join(mkdtempSync(join(tmpdir(), 'tour-')), 'agent');
  const started = await startSystemProcess(`tour-${tag}`, {
    SVC_ADMIN_EMAIL: adminEmail,
    SVC_ADMIN_PASSWORD: adminPassword,
    // The last step waits for the stopped agent to count as offline: seconds here, five minutes by default.
    SVC_AGENT_STALE_TIMEOUT_SECONDS: '5',
  });
  ({ consoleUrl, invoicingUrl, analyticsPath } = started);
  system = started.child;
}, 180_000);

afterAll(async () => {
  await endGroup(tour);
  // The tour stops its agent itself (its last block); whatever a failed run left behind goes here.
  if (agentDir) for (const pid of processesWith(agentDir)) process.kill(pid, 'SIGKILL');
  await endGroup(system, 30_000);
  if (analyticsPath) rmSync(analyticsPath, { recursive: true, force: true });
  if (agentDir) rmSync(join(agentDir, '..'), { recursive: true, force: true });
}, 60_000);

describe('the README tour', () => {
  it(
    'runs as written against a started system',
    async () => {
      const script = tourScript(readFileSync('README.md', 'utf8'));
      tour = spawnGroup('bash', ['-x', '-euo', 'pipefail', '-c', script], {
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
      // `kill $AGENT_PID`, in the tour's last step, stopped the agent (npm passes the signal on to it).
      await waitFor(() => processesWith(agentDir).length === 0, 30_000, 'the agent to stop', 200);
      const lines = out.split('\n');
      expect(out).toMatch(new RegExp(`"email":"${adminEmail}".*"mfa_enabled":true`));
      expect(out).toMatch(/"agent_status":"online"/);
      expect(out).toMatch(/^\S+T\S+Z avg \d+\.\d% max \d+\.\d%$/m);
      expect(
        lines.some((line) => line.startsWith(`${hostname()} `) && line.endsWith(' online')),
        out,
      ).toBe(true);
      // The last step: the rule's notification of the stopped agent, and its e-mail handed to the mail queue.
      expect(out).toMatch(/^firing Agent offline for 1 min or more: \S+$/m);
      expect(out).toMatch(/^firing delivered 1 attempt\(s\)$/m);
      expect(out).toMatch(
        /"application":"[^"]+","period":"\d{4}-\d\d-\d\d\.\.\d{4}-\d\d-\d\d","currency":"[A-Z]{3}","total_hours":"\d+\.\d+","total_amount":"\d+\.\d\d","lines":[1-9]\d*/,
      );
    },
    TOUR_MS + 30_000,
  );
});
