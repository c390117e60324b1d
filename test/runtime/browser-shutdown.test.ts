import { allEntities } from '../../actors/index.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { INGEST_SUBJECT } from '../../actors/invoice/analytics/ingest.ts';
import { systemClock } from '../../platform/clock.ts';
import { publishDurable } from '../../platform/jetstream.ts';
import { createLogger } from '../../platform/logger.ts';
import { connectNats } from '../../platform/nats.ts';
import { Stores } from '../../platform/stores/index.ts';
import { waitForIngest } from '../../scripts/seed/seed-demo.ts';
import { brokerEnv, testConfig } from '../support/env.ts';
import { createUser, tokenFor } from '../support/identity.ts';
import { freePort, waitFor } from '../support/processes.ts';

/**
 * The invoice renderer's Chromium after the process is told to stop. puppeteer starts Chromium in
 * a process group of its own, so the signals sent to ours never reach it: only our shutdown (or our exit hook) ends
 * it. `npm start` forwards the SIGTERM its group got, so the process gets it twice; with the handler gone after the
 * first, the second killed it outright (no 'exit' event, async log lines lost) and left Chromium orphaned.
 */

const base = testConfig();
const log = createLogger('silent');

/** Pids of the processes in process group `pgid` (read from /proc: only Chromium's own group is looked at). */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command's closing parenthesis: state, ppid, pgrp.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') members.push(Number(entry));
    } catch {
      // Gone while listed.
    }
  }
  return members;
}

interface Main {
  proc: ChildProcess;
  stdout: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** main.ts, everything in it, as the leader of a process group of its own (what a terminal or npm gives it). */
function runMain(env: Record<string, string>): Main {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], {
    env: { ...process.env, ...brokerEnv(), ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, stdout: () => out, exited };
}

const chromiumPid = (out: string): number | undefined => {
  const line = out.split('\n').find((l) => l.includes('chromium started for PDF rendering'));
  return line ? (JSON.parse(line) as { pid: number }).pid : undefined;
};

describe('the PDF renderer after a busy run and a SIGTERM to the process group', () => {
  let nc: NatsConnection;
  let stores: Stores;
  let analytics: string;
  let main: Main | undefined;
  let chromium: number | undefined;

  beforeAll(async () => {
    nc = await connectNats(base.SVC_NATS_URL, 'browser-shutdown-test', log, base.SVC_NATS_CREDS, base.SVC_NATS_CA);
    stores = new Stores(base, log, { entities: allEntities });
    analytics = mkdtempSync(join(tmpdir(), 'svc-analytics-'));
  });
  afterEach(() => {
    // Only what this test started: its main.ts and the Chromium that main.ts started.
    if (main && main.proc.exitCode === null && main.proc.signalCode === null) main.proc.kill('SIGKILL');
    if (chromium !== undefined) for (const pid of groupMembers(chromium)) process.kill(pid, 'SIGKILL');
  });
  afterAll(async () => {
    await nc.close();
    await stores.close();
    rmSync(analytics, { recursive: true, force: true });
  });

  /** main.ts up, a few PDFs rendered while hundreds of other requests (many malformed) arrive; Chromium's pid. */
  async function busyRun(): Promise<{ main: Main; chromium: number }> {
    const [consolePort, invoicingPort] = [await freePort(), await freePort()];
    main = runMain({
      SVC_DB_URL: base.SVC_DB_URL,
      SVC_JWT_SECRET: base.SVC_JWT_SECRET!,
      SVC_MFA_ENCRYPTION_KEY: base.SVC_MFA_ENCRYPTION_KEY!,
      SVC_ANALYTICS_PATH: analytics,
      SVC_SERVER_PORT: String(consolePort),
      SVC_INVOICING_PORT: String(invoicingPort),
      SVC_LOG_LEVEL: 'info',
      SVC_AUTH_RATE_LIMIT: '1000000',
      SVC_API_RATE_LIMIT: '1000000',
      // Renders queue for two pages on a loaded machine: the default 10 s would answer some finalizes 504.
      SVC_REQUEST_TIMEOUT_MS: '60000',
    });
    const m = main;
    await waitFor(
      async () => {
        if (m.proc.exitCode !== null) throw new Error(`main.ts exited early: ${m.stdout().slice(-2000)}`);
        return fetch(`http://127.0.0.1:${invoicingPort}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
      },
      60_000,
      'main.ts up',
      200,
    );
    const tag = randomUUID().slice(0, 8);
    const admin = await createUser({ tag, config: base, stores }, { superAdmin: true });
    const token = await tokenFor({ config: base, stores, clock: systemClock }, admin);
    const app = `RET-${tag}`;
    await publishDurable(nc, INGEST_SUBJECT, {
      batch_id: `browser-shutdown-${tag}`,
      customers: [
        {
          customer_key: `C-${tag}`,
          name: 'Acme',
          email: 'billing@acme.example',
          address: 'Hafenstraße 12',
          country: 'DE',
          vat_id: 'DE1',
        },
      ],
      rate_tiers: [{ rate_tier: `std-${tag}`, name: 'Standard', multiplier: '1.0000' }],
      applications: [
        {
          application_key: app,
          customer_key: `C-${tag}`,
          name: 'App',
          is_active: true,
          deal_type: 'RET',
          currency: 'EUR',
          base_amount: '2000.00',
          included_hours: '10.0000',
          hourly_rate: '95.00',
          overtime_rate: '120.00',
        },
      ],
      worklogs: [],
    });
    await waitForIngest(nc, 30_000);
    const auth = { authorization: `Bearer ${token}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const inv = (path: string, init: RequestInit): Promise<Response> =>
      fetch(`http://127.0.0.1:${invoicingPort}${path}`, init);
    const prefill = await inv('/api/v1/invoices/prefill', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ application_key: app }),
    });
    expect(prefill.status).toBe(200);
    const preview = JSON.stringify(((await prefill.json()) as { data: unknown }).data);
    const drafts: string[] = [];
    for (let i = 0; i < 6; i++)
      drafts.push(
        (
          (await (await inv('/api/v1/invoices/generate', { method: 'POST', headers: json, body: preview })).json()) as {
            data: { id: string };
          }
        ).data.id,
      );

    // The load: malformed and unauthenticated requests to both gateways while the PDFs render.
    const junk = ['{', 'null', '[]', '{"a":1}', JSON.stringify({ name: 'x'.repeat(5000) })];
    const paths = [
      `http://127.0.0.1:${invoicingPort}/api/v1/invoices/zz`,
      `http://127.0.0.1:${invoicingPort}/api/v1/invoices/prefill`,
      `http://127.0.0.1:${consolePort}/api/v1/clients`,
      `http://127.0.0.1:${consolePort}/api/v1/auth/login`,
    ];
    let sent = 0;
    const fuzz = async (): Promise<void> => {
      while (sent < 800) {
        const n = sent++;
        await fetch(paths[n % paths.length]!, {
          method: 'POST',
          headers: n % 2 ? json : { 'content-type': 'application/json' },
          body: junk[n % junk.length],
        }).then(
          (r) => r.arrayBuffer(),
          () => undefined,
        );
      }
    };
    const [finalized] = await Promise.all([
      Promise.all(
        drafts.map(
          async (id) => (await inv(`/api/v1/invoices/${id}/finalize`, { method: 'POST', headers: auth })).status,
        ),
      ),
      ...Array.from({ length: 6 }, fuzz),
    ]);
    expect(finalized).toContain(200);
    chromium = chromiumPid(m.stdout());
    expect(chromium).toBeDefined();
    expect(groupMembers(chromium!).length).toBeGreaterThan(0);
    return { main: m, chromium: chromium! };
  }

  it('stops in order and leaves no Chromium when the SIGTERM comes twice, as npm start forwards it', async () => {
    const { main: m, chromium: browser } = await busyRun();
    process.kill(-m.proc.pid!, 'SIGTERM');
    await waitFor(() => m.stdout().includes('shutting down'), 10_000, 'the shutting-down line');
    // npm's copy of the group's signal, once the first is being handled.
    process.kill(m.proc.pid!, 'SIGTERM');
    expect(await m.exited).toEqual({ code: 0, signal: null });
    expect(m.stdout()).toMatch(/"msg":"stopped"/);
    await waitFor(() => groupMembers(browser).length === 0, 10_000, 'Chromium gone');
  }, 180_000);
});

describe('a helper process group registered with killGroupOnExit', () => {
  it.each(['throw', 'exit'])(
    'is killed when the process ends by %s',
    async (how) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/crashing-parent.ts', how], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
      const helper = Number(out.trim());
      expect(helper).toBeGreaterThan(0);
      try {
        expect(code).toBe(how === 'throw' ? 1 : 3);
        await waitFor(() => groupMembers(helper).length === 0, 5_000, 'helper gone');
      } finally {
        for (const pid of groupMembers(helper)) process.kill(pid, 'SIGKILL');
      }
    },
    30_000,
  );
});
