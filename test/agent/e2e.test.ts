import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { wireDurableSubject } from '../../platform/namespace.ts';
import { connectNats } from '../../platform/nats.ts';
import { FileChanged } from '../../contracts/domains/fleet-agents.ts';
import { NATS_CA, NATS_CREDS, NATS_URL } from '../support/env.ts';
import { createClient } from '../support/identity.ts';
import { stopProcess, waitFor } from '../support/processes.ts';
import type { TestSystem } from '../support/system.ts';
import { api, expectStatus, startAdminSystem, userWith, type Method } from '../identity/admin-support.ts';

/**
 * The reference agent run as a user runs it (`npm run agent -- enroll|run`, as child processes) against the system
 * over the real, authenticated NATS server, reporting the real machine this test runs on.
 */

const decoder = new TextDecoder();
const execFileAsync = promisify(execFile);
let sys: TestSystem;
let root: string;
let call: (method: Method, url: string, payload?: unknown) => ReturnType<ReturnType<typeof api>>;
let baseUrl: string;
let service: NatsConnection;
const children: ChildProcess[] = [];
let clientId: string;
let envId: string;
let stateDir: string;
let watchDir: string;
let agentId: string;
let hostId: string;
let agent: ChildProcess | undefined;

/** Async: the console answering the agent runs on this process's event loop. Rejects with the CLI's stderr. */
const agentCli = async (args: string[]): Promise<string> => {
  try {
    return (
      await execFileAsync(process.execPath, ['agent/main.ts', ...args], {
        encoding: 'utf8',
        env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
        timeout: 60_000,
      })
    ).stdout;
  } catch (err) {
    throw new Error(String((err as { stderr?: string }).stderr ?? err));
  }
};

function runAgent(): ChildProcess {
  const child = spawn(
    process.execPath,
    ['agent/main.ts', 'run', '--state-dir', stateDir, '--interval', '1', '--inventory-interval', '3'],
    {
      env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  children.push(child);
  return child;
}

async function host(): Promise<Record<string, unknown>> {
  const res = await call('GET', `/api/v1/hosts/${hostId}`);
  expectStatus(res, 200);
  return (res.json() as { data: Record<string, unknown> }).data;
}

async function listOf<T>(url: string): Promise<T[]> {
  const res = await call('GET', url);
  expectStatus(res, 200);
  return (res.json() as { data: T[] }).data;
}

beforeAll(async () => {
  ({ sys, root } = await startAdminSystem({ SVC_AGENT_STALE_TIMEOUT_SECONDS: '2' }));
  call = api(sys, { token: root });
  // The agent speaks HTTP to a real port, as it would to a deployed console.
  await sys.console!.listen({ host: '127.0.0.1', port: 0 });
  baseUrl = `http://127.0.0.1:${(sys.console!.server.address() as AddressInfo).port}`;
  service = await connectNats(NATS_URL, 'agent-e2e', createLogger('silent'), NATS_CREDS, NATS_CA);
  clientId = (await createClient(sys)).id;
  const env = await call('POST', `/api/v1/clients/${clientId}/environments`, {
    name: 'Production',
    slug: 'production',
  });
  expectStatus(env, 201);
  envId = (env.json() as { data: { id: string } }).data.id;
  stateDir = mkdtempSync(join(tmpdir(), 'agent-e2e-'));
  watchDir = mkdtempSync(join(tmpdir(), 'agent-watch-'));
}, 120_000);

afterAll(async () => {
  for (const c of children) await stopProcess(c);
  await service?.drain();
  await sys?.stop();
});

describe('the reference agent against the running system', () => {
  it('enrols with an install token and writes agent.json and a creds file of mode 600', async () => {
    const tokenRes = await call('POST', `/api/v1/environments/${envId}/install-tokens`, {});
    expectStatus(tokenRes, 201);
    const token = (tokenRes.json() as { data: { token: string } }).data.token;
    await agentCli(['enroll', '--server', baseUrl, '--token', token, '--state-dir', stateDir]);
    const state = JSON.parse(readFileSync(join(stateDir, 'agent.json'), 'utf8')) as {
      agent_id: string;
      host_id: string;
      nats_servers: string[];
      inbox_prefix: string;
    };
    expect(state.inbox_prefix).toBe(`_INBOX.agent-${state.agent_id}`);
    expect(statSync(join(stateDir, 'agent.creds')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(stateDir, 'agent.creds'), 'utf8')).toMatch(
      /-----BEGIN NATS USER JWT-----[\s\S]*-----BEGIN USER NKEY SEED-----/,
    );
    ({ agent_id: agentId, host_id: hostId } = state);
    // The token is spent: a second enrolment with it fails with the server's message.
    await expect(
      agentCli([
        'enroll',
        '--server',
        baseUrl,
        '--token',
        token,
        '--state-dir',
        mkdtempSync(join(tmpdir(), 'agent-e2e-')),
      ]),
    ).rejects.toThrow(/already used/);
  });

  it('runs: the host goes online and the machine real inventory shows through every inventory route', async () => {
    agent = runAgent();
    await waitFor(async () => (await host()).agent_status === 'online', 30_000, 'host online');
    await waitFor(
      async () => (await listOf<unknown>(`/api/v1/hosts/${hostId}/packages`)).length > 0,
      30_000,
      'first snapshot',
    );
    const h = await host();
    expect(h).toMatchObject({ id: hostId, agent_id: agentId, environment_id: envId, client_id: clientId });
    expect(Number(h.cpu_cores)).toBeGreaterThan(0);
    expect(Number(h.memory_total_bytes)).toBeGreaterThan(0);
    expect(String(h.kernel_version)).toBe(execFileSync('uname', ['-r'], { encoding: 'utf8' }).trim());

    // Packages: what dpkg says is installed, with the same version.
    const packages = await listOf<{ name: string; version: string }>(`/api/v1/hosts/${hostId}/packages`);
    const bash = execFileSync('dpkg-query', ['-W', '-f=${Version}', 'bash'], { encoding: 'utf8' });
    expect(packages.find((p) => p.name === 'bash')?.version).toBe(bash);
    // Processes (by CPU, paginated): the agent itself is among them.
    await waitFor(
      async () => {
        const res = await call('GET', `/api/v1/hosts/${hostId}/processes?per_page=100&page=1`);
        const all: { pid: number }[] = [];
        const total = (res.json() as { meta: { total: number } }).meta.total;
        for (let page = 1; (page - 1) * 100 < total; page++)
          all.push(...(await listOf<{ pid: number }>(`/api/v1/hosts/${hostId}/processes?per_page=100&page=${page}`)));
        return all.some((p) => p.pid === agent!.pid);
      },
      15_000,
      'agent process listed',
    );
    const top = await call('GET', `/api/v1/hosts/${hostId}/processes?per_page=5`);
    const cpu = (top.json() as { data: { cpu_percent: number }[] }).data.map((p) => p.cpu_percent);
    expect(cpu).toEqual([...cpu].sort((a, b) => b - a));
    // Users, ports (the console's own listening port), interfaces (loopback).
    expect(
      (await listOf<{ username: string; uid: number }>(`/api/v1/hosts/${hostId}/users`)).find(
        (u) => u.username === 'root',
      )?.uid,
    ).toBe(0);
    const port = Number(new URL(baseUrl).port);
    await waitFor(
      async () =>
        (await listOf<{ local_port: number }>(`/api/v1/hosts/${hostId}/ports`)).some((p) => p.local_port === port),
      15_000,
      'console port listed',
    );
    expect((await listOf<{ name: string }>(`/api/v1/hosts/${hostId}/interfaces`)).map((i) => i.name)).toContain('lo');
    // Cron jobs (list with meta), GPU devices (none here), services (an array; empty without systemd).
    const cron = await call('GET', `/api/v1/hosts/${hostId}/cron-jobs`);
    expectStatus(cron, 200);
    expect(cron.json().meta).toMatchObject({ page: 1, per_page: 20 });
    expect(await listOf(`/api/v1/hosts/${hostId}/gpu-devices`)).toEqual([]);
    expect(Array.isArray(await listOf(`/api/v1/hosts/${hostId}/services`))).toBe(true);
    const security = await call('GET', `/api/v1/hosts/${hostId}/security`);
    expectStatus(security, 200);
    const sec = security.json().data as Record<string, unknown[]>;
    expect(Object.keys(sec).sort()).toEqual(['certificates', 'firewall_rules', 'kernel_modules', 'security_items']);
    expect(sec.certificates!.length).toBeGreaterThan(0);
  });

  it('reports the PostgreSQL, Redis and NATS running here as integrations with their configuration', async () => {
    await waitFor(
      async () => {
        const ids = (
          await listOf<{ integration_id: string; config: Record<string, unknown> }>(
            `/api/v1/hosts/${hostId}/integrations`,
          )
        )
          .filter((i) => Object.keys(i.config).length > 0)
          .map((i) => i.integration_id);
        return ['postgresql', 'redis', 'nats'].every((x) => ids.includes(x));
      },
      30_000,
      'integrations with config',
    );
    const list = await listOf<{
      integration_id: string;
      status: string;
      hostname: string;
      config: Record<string, { value: unknown; source: string; category: string }>;
    }>(`/api/v1/hosts/${hostId}/integrations`);
    const pg = list.find((i) => i.integration_id === 'postgresql')!;
    expect(pg.status).toBe('ok');
    expect(Object.values(pg.config).every((v) => typeof v.source === 'string' && typeof v.category === 'string')).toBe(
      true,
    );
    const types = await listOf<{ id: string; host_count: number }>(`/api/v1/integrations`);
    expect(types.find((t) => t.id === 'redis')?.host_count).toBeGreaterThanOrEqual(1);
    const ofClient = await listOf<{ host_id: string }>(`/api/v1/clients/${clientId}/integrations`);
    expect(ofClient.every((i) => i.host_id === hostId)).toBe(true);
  });

  it('applies a watch config pushed while online, reports file changes, and fetches a newer one after a restart', async () => {
    const put = await call('PUT', `/api/v1/hosts/${hostId}/watch-config`, {
      paths: [watchDir],
      exclude_patterns: ['*.swp'],
    });
    expectStatus(put, 200);
    const configFile = join(stateDir, 'config', 'watch_files.json');
    await waitFor(
      () => {
        try {
          return (JSON.parse(readFileSync(configFile, 'utf8')) as { version: number }).version === 1;
        } catch {
          return false;
        }
      },
      15_000,
      'config_update applied',
    );
    const consumer = await jetstream(service).consumers.get('SVC_EVENTS', {
      filter_subjects: wireDurableSubject('svc.evt.fleet.file_change'),
    });
    const target = join(watchDir, 'app.conf');
    writeFileSync(target, 'listen 80;\n');
    let seen: FileChanged | undefined;
    for (let i = 0; i < 30 && !seen; i++) {
      // Written again each second: the config file is saved before the agent's watcher is armed, and a write before
      // its first scan is part of what that scan takes as already there.
      if (i > 0) writeFileSync(target, `listen ${80 + i};\n`);
      const m = await consumer.next({ expires: 1000 });
      if (!m) continue;
      const e = FileChanged.parse(JSON.parse(decoder.decode(m.data)));
      if (e.host_id === hostId && e.path === target) seen = e;
    }
    await consumer.delete().catch(() => undefined);
    expect(seen).toMatchObject({ type: 'file_change', agent_id: agentId, environment_id: envId, client_id: clientId });
    expect(['created', 'modified']).toContain(seen!.change);

    // Stopped, it misses version 2; started again, it fetches it.
    await stopProcess(agent);
    expectStatus(await call('PUT', `/api/v1/hosts/${hostId}/watch-config`, { paths: [watchDir, stateDir] }), 200);
    // Meanwhile, no heartbeat for longer than the timeout: offline.
    sys.clock.advance(2_500);
    await waitFor(async () => (await host()).agent_status === 'offline', 15_000, 'host offline');
    agent = runAgent();
    await waitFor(async () => (await host()).agent_status === 'online', 30_000, 'host online again');
    await waitFor(
      () => {
        try {
          return (JSON.parse(readFileSync(configFile, 'utf8')) as { version: number }).version === 2;
        } catch {
          return false;
        }
      },
      15_000,
      'version 2 fetched at start',
    );
  });

  it('keeps another client out of this host, its inventory and its integrations', async () => {
    const other = await createClient(sys);
    const outsider = api(sys, { token: (await userWith(sys, 'Admin', other.id)).token });
    for (const path of ['', '/packages', '/processes', '/security', '/integrations', '/watch-config'])
      expectStatus(await outsider('GET', `/api/v1/hosts/${hostId}${path}`), 404);
    expectStatus(await outsider('GET', `/api/v1/environments/${envId}/hosts`), 404);
    const hostsOfIntegration = await outsider('GET', '/api/v1/integrations/postgresql/hosts');
    expect((hostsOfIntegration.json() as { data: { host_id: string }[] }).data.some((h) => h.host_id === hostId)).toBe(
      false,
    );
  });

  it('is refused by the broker once revoked', async () => {
    expectStatus(await call('DELETE', `/api/v1/agents/${agentId}`), 204);
    const [row] = await sys.sql<{ status: string }>(`SELECT status FROM agents WHERE id = ?`, [agentId]);
    expect(row?.status).toBe('revoked');
    // The agent keeps trying; the host never comes back online.
    sys.clock.advance(2_500);
    await waitFor(async () => (await host()).agent_status === 'offline', 15_000, 'offline after revocation');
    const seen = (await host()).last_seen_at;
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await host()).agent_status).toBe('offline');
    expect((await host()).last_seen_at).toBe(seen);
  });
});
