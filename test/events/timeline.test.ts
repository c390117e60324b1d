import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollAgent, startAgent, type RunningAgent } from '../../agent/index.ts';
import { createLogger } from '../../platform/logger.ts';
import { api, expectStatus, userWith } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import type { TestSystem } from '../support/system.ts';
import {
  createReceiver,
  customRole,
  deliver,
  environmentScoped,
  eventually,
  fixture,
  githubSignature,
  startEventsSystem,
  statusOfCall,
  userWithRole,
} from './support.ts';

/**
 * The event timeline fed by a real reference agent (enrolled over HTTP, speaking NATS with its own credentials, its
 * file watcher on a real directory) and by a code host's deployments through a receiver.
 */

let sys: TestSystem;
let root: string;
let clientId: string;
let envId: string;
let otherEnv: string;
let hostId: string;
let agent: RunningAgent | undefined;
let watchDir: string;

interface Row {
  timestamp: string;
  event_type: string;
  title: string;
  description: string;
  host_id: string | null;
  environment_id: string | null;
}

const START = new Date(Date.now() - 30 * 86_400_000).toISOString();
const END = new Date(Date.now() + 86_400_000).toISOString();
async function timeline(token: string, query = ''): Promise<Row[]> {
  const res = await api(sys, { token })('GET', `/api/v1/events/timeline?start=${START}&end=${END}${query}`);
  expectStatus(res, 200);
  return res.json().data as Row[];
}

beforeAll(async () => {
  ({ sys, root } = await startEventsSystem({ SVC_AGENT_STALE_TIMEOUT_SECONDS: '2' }));
  await sys.console!.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(sys.console!.server.address() as AddressInfo).port}`;
  const call = api(sys, { token: root });
  clientId = (await createClient(sys)).id;
  const env = await call('POST', `/api/v1/clients/${clientId}/environments`, {
    name: 'Production',
    slug: 'production',
  });
  expectStatus(env, 201);
  envId = env.json().data.id;
  otherEnv = (
    await call('POST', `/api/v1/clients/${clientId}/environments`, { name: 'Staging', slug: 'staging' })
  ).json().data.id;
  const token = (await call('POST', `/api/v1/environments/${envId}/install-tokens`, {})).json().data.token as string;
  const stateDir = mkdtempSync(join(tmpdir(), 'events-agent-'));
  watchDir = mkdtempSync(join(tmpdir(), 'events-watch-'));
  ({ host_id: hostId } = await enrollAgent({ server: baseUrl, token, stateDir, hostname: `timeline-${sys.tag}` }));
  agent = await startAgent({
    stateDir,
    intervalMs: 500,
    inventoryIntervalMs: 3_600_000,
    eventBatchMs: 200,
    log: createLogger('silent'),
  });
}, 120_000);

afterAll(async () => {
  await agent?.stop(2_000);
  await sys?.stop();
});

describe('the event timeline', () => {
  it('shows the agent going online, the files it saw change, a deploy, and the agent going offline', async () => {
    // Online: the first heartbeat.
    await eventually(
      () => timeline(root, `&host_id=${hostId}&event_type=agent_status`),
      (r) => r.some((x) => x.title.endsWith('went online')),
      'online on the timeline',
      30_000,
    );

    // A watched file changes on the host.
    expectStatus(
      await api(sys, { token: root })('PUT', `/api/v1/hosts/${hostId}/watch-config`, { paths: [watchDir] }),
      200,
    );
    await eventually(
      async () => agent!.configVersion,
      (v) => v === 1,
      'watch config applied',
      15_000,
    );
    const file = join(watchDir, 'nginx.conf');
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(file, 'worker_processes auto;\n');
    const changes = await eventually(
      () => timeline(root, `&host_id=${hostId}&event_type=file_change`),
      (r) => r.some((x) => x.title.startsWith(file)),
      'file change on the timeline',
      30_000,
    );
    const change = changes.find((x) => x.title.startsWith(file))!;
    expect(change).toMatchObject({ event_type: 'file_change', host_id: hostId, environment_id: envId });
    // The agent reports the machine's own hostname in its facts: the timeline names the host as the fleet knows it.
    const hostname = (await api(sys, { token: root })('GET', `/api/v1/hosts/${hostId}`)).json().data.hostname as string;
    expect(change.description).toBe(
      `${file} was created on ${hostname} (23 bytes, sha256 ${createHash('sha256').update('worker_processes auto;\n').digest('hex')}).`,
    );

    // A deploy of the host's environment, from GitHub.
    const hook = await createReceiver(sys, root, 'webhook-endpoints', {
      client_id: clientId,
      environment_id: envId,
      source: 'github',
      name: 'shop',
      secret: 'tl',
    });
    const body = fixture('github/deployment-status-success.json');
    expectStatus(
      await deliver(sys, hook.path, body, {
        'x-github-event': 'deployment_status',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': githubSignature('tl', body),
      }),
      202,
    );
    const deploys = await eventually(
      () => timeline(root, `&host_id=${hostId}&event_type=deploy`),
      (r) => r.length === 1,
      'deploy on the timeline',
    );
    expect(deploys[0]).toMatchObject({
      event_type: 'deploy',
      title: 'northwind/shop-api deployed v2.14.1 to production',
      host_id: null,
      environment_id: envId,
      timestamp: '2026-11-21T15:20:44.000Z',
    });
    expect(deploys[0]!.description).toContain('https://github.com/northwind/shop-api/actions/runs/');

    // Offline: the agent stops, no heartbeat for longer than the stale timeout.
    await agent!.stop(2_000);
    agent = undefined;
    sys.clock.advance(3_000);
    await eventually(
      () => timeline(root, `&host_id=${hostId}&event_type=agent_status`),
      (r) => r.some((x) => x.title.endsWith('went offline')),
      'offline on the timeline',
      30_000,
    );

    const all = await timeline(root, `&host_id=${hostId}`);
    expect(new Set(all.map((x) => x.event_type))).toEqual(new Set(['agent_status', 'file_change', 'deploy']));
    expect(all.map((x) => x.timestamp)).toEqual([...all.map((x) => x.timestamp)].sort().reverse());
    expect(Object.keys(all[0]!).sort()).toEqual([
      'description',
      'environment_id',
      'event_type',
      'host_id',
      'timestamp',
      'title',
    ]);
    const status = all.filter((x) => x.event_type === 'agent_status');
    expect(status[0]!.title).toBe(`${hostname} went offline`);
    expect(status[0]!.description).toBe(`The agent of ${hostname} went from online to offline.`);
  });

  it('filters by environment, event type and limit; the limit is at most 1000', async () => {
    const byEnv = await timeline(root, `&environment_id=${envId}`);
    expect(byEnv.length).toBeGreaterThanOrEqual(4);
    expect(await timeline(root, `&environment_id=${otherEnv}`)).toEqual([]);
    expect((await timeline(root, `&environment_id=${envId}&limit=2`)).length).toBe(2);
    expect(
      (await timeline(root, `&environment_id=${envId}&event_type=deploy`)).every((x) => x.event_type === 'deploy'),
    ).toBe(true);
    expect(await timeline(root, `&host_id=${hostId}&environment_id=${otherEnv}`)).toEqual([]);
    const q = (s: string) => api(sys, { token: root })('GET', `/api/v1/events/timeline?${s}`);
    expectStatus(await q(`start=${START}&end=${END}&limit=1000`), 200);
    const tooMany = await q(`start=${START}&end=${END}&limit=1001`);
    expectStatus(tooMany, 400);
    expect(tooMany.json().error.message).toContain('1000');
    expectStatus(await q(`end=${END}`), 400);
    expectStatus(await q(`start=${START}`), 400);
    expectStatus(await q(`start=${END}&end=${START}`), 400);
    expectStatus(await q(`start=${START}&end=${END}&event_type=reboot`), 400);
    expectStatus(await q(`start=${START}&end=${END}&host_id=nope`), 400);
    expectStatus(await q(`start=${START}&end=${END}&limit=0`), 400);
  });

  it('shows each kind of event only where the caller may read it', async () => {
    // Engineer: hosts:read, no changes:read → agent status only.
    const engineer = (await userWith(sys, 'Engineer', clientId)).token;
    const seen = await timeline(engineer, `&host_id=${hostId}`);
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen.map((x) => x.event_type))).toEqual(new Set(['agent_status']));
    const unfiltered = await timeline(engineer);
    expect(unfiltered.every((x) => x.event_type === 'agent_status')).toBe(true);
    // Client Engineer: hosts:read and changes:read → everything here.
    const ce = (await userWith(sys, 'Client Engineer', clientId)).token;
    expect(new Set((await timeline(ce, `&host_id=${hostId}`)).map((x) => x.event_type))).toEqual(
      new Set(['agent_status', 'file_change', 'deploy']),
    );
    // A type the caller cannot read at all is 403; so is a caller who can read none.
    expectStatus(
      await api(sys, { token: engineer })('GET', `/api/v1/events/timeline?start=${START}&end=${END}&event_type=deploy`),
      403,
    );
    const none = (await userWithRole(sys, await customRole(sys, ['metrics:read']), clientId)).token;
    expectStatus(
      await api(sys, { token: none })('GET', `/api/v1/events/timeline?start=${START}&end=${END}&host_id=${hostId}`),
      403,
    );
    // Another client's people see nothing of it: the host is 404, their unfiltered timeline is empty of it.
    const other = await createClient(sys);
    const outsider = (await userWith(sys, 'Admin', other.id)).token;
    expectStatus(
      await api(sys, { token: outsider })('GET', `/api/v1/events/timeline?start=${START}&end=${END}&host_id=${hostId}`),
      404,
    );
    expectStatus(
      await api(sys, { token: outsider })(
        'GET',
        `/api/v1/events/timeline?start=${START}&end=${END}&environment_id=${envId}`,
      ),
      404,
    );
    expect((await timeline(outsider)).some((x) => x.host_id === hostId || x.environment_id === envId)).toBe(false);
  });

  it('limits an environment-scoped reader to its environment', async () => {
    const user = await userWithRole(sys, await customRole(sys, []), clientId);
    const onStaging = environmentScoped(user, {
      [otherEnv]: { client_id: clientId, permissions: ['hosts:read', 'changes:read'] },
    });
    const rows = await sys.caller.call('svc.events.timeline', { start: START, end: END, limit: 1000 }, onStaging);
    expect(rows.some((x) => x.host_id === hostId || x.environment_id === envId)).toBe(false);
    expect(
      await statusOfCall(
        sys.caller.call('svc.events.timeline', { start: START, end: END, limit: 10, host_id: hostId }, onStaging),
      ),
    ).toBe(404);
    const onProduction = environmentScoped(user, {
      [envId]: { client_id: clientId, permissions: ['hosts:read', 'changes:read'] },
    });
    const mine = await sys.caller.call(
      'svc.events.timeline',
      { start: START, end: END, limit: 1000, host_id: hostId },
      onProduction,
    );
    expect(new Set(mine.map((x) => x.event_type))).toEqual(new Set(['agent_status', 'file_change', 'deploy']));
  });
});
