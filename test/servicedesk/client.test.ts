import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { openValkeyKv, type KvStore } from '../../platform/stores/kv.ts';
import { TokenBucket } from '../../actors/servicedesk/tracker/bucket.ts';
import { TrackerClient } from '../../actors/servicedesk/tracker/client.ts';
import { expectStatus } from '../identity/admin-support.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { cleanPeerData, mapOrganization, storedCount, syncEngineFor } from './support.ts';
import { PEER_EMAIL, PEER_TIMEZONE, PEER_TOKEN, TrackerPeer } from '../support/tracker-peer.ts';

const log = createLogger('silent');
let peer: TrackerPeer;
const stores: KvStore[] = [];

beforeAll(async () => {
  peer = new TrackerPeer({ perOrg: [5, 5, 1] });
  await peer.start();
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await peer.stop();
});

/** A client as one instance of the actors builds it: its own Valkey connection, the shared key prefix. */
async function instance(prefix: string): Promise<TrackerClient> {
  const kv = await openValkeyKv(process.env.SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379', log, prefix);
  stores.push(kv);
  return new TrackerClient(
    { baseUrl: peer.url, email: PEER_EMAIL, apiToken: PEER_TOKEN, timeoutMs: 5_000 },
    new TokenBucket(kv, log),
    log,
  );
}

describe('the token bucket shared through Valkey', () => {
  it('holds 50 calls per second, burst 10, across instances, under a burst of 500 calls', async () => {
    const prefix = `svc-test:${randomUUID().slice(0, 8)}:`;
    const [one, two] = [await instance(prefix), await instance(prefix)];
    const before = peer.log.length;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        (i % 2 === 0 ? one : two).call({ method: 'GET', path: '/rest/api/3/myself', idempotent: true }),
      ),
    );
    const elapsed = Date.now() - started;
    const times = peer.log
      .slice(before)
      .map((l) => l.at)
      .sort((a, b) => a - b);
    expect(times).toHaveLength(500);
    // (500 - burst 10) / 50 per second = 9.8 s at the least.
    expect(elapsed).toBeGreaterThanOrEqual(9_500);
    expect(elapsed).toBeLessThan(15_000);
    // In any window: at most the burst plus the window's refill, with a little slack for arrival jitter (the calls
    // leave on time; on a busy machine a few arrive together, so a window may hold up to ~12 more).
    const worstIn = (ms: number): number => {
      let worst = 0;
      for (let i = 0, j = 0; i < times.length; i++) {
        while (times[i]! - times[j]! >= ms) j++;
        worst = Math.max(worst, i - j + 1);
      }
      return worst;
    };
    expect(worstIn(1_000)).toBeLessThanOrEqual(10 + 50 + 12);
    expect(worstIn(1_000)).toBeGreaterThanOrEqual(45);
    expect(worstIn(3_000)).toBeLessThanOrEqual(10 + 150 + 12);
  }, 30_000);

  it('refuses at once (429) a call whose wait would pass its deadline', async () => {
    const client = await instance(`svc-test:${randomUUID().slice(0, 8)}:`);
    // Drain the burst, then ask with a deadline shorter than a token's wait.
    await Promise.all(Array.from({ length: 10 }, () => client.call({ method: 'GET', path: '/rest/api/3/myself' })));
    const queued = Array.from({ length: 40 }, () => client.call({ method: 'GET', path: '/rest/api/3/myself' }));
    const refused = await client
      .call({ method: 'GET', path: '/rest/api/3/myself', deadline: Date.now() + 300 })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'too_many_requests' });
    await Promise.all(queued);
  });
});

describe('without configuration', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({
      SVC_ACTORS: 'identity,servicedesk',
      SVC_SD_BASE_URL: '',
      SVC_SD_EMAIL: '',
      SVC_SD_API_TOKEN: '',
      SVC_ENABLE_DEBUG_ENDPOINTS: 'true',
    });
  });
  afterAll(() => sys?.stop());

  it('every service-desk route answers 503 naming the variables', async () => {
    const { userWith } = await import('../identity/admin-support.ts');
    const root = (await userWith(sys)).token;
    for (const url of [
      '/api/v1/service-desk/tickets?organization_id=1',
      '/api/v1/service-desk/admin/organizations',
      '/api/v1/service-desk/metrics/summary?organization_id=1',
      '/api/v1/service-desk/tickets/SUP-1/comments',
    ]) {
      const res = await sys.http({ method: 'GET', url, token: root });
      expectStatus(res, 503);
      expect(res.json().error.message).toMatch(/SVC_SD_BASE_URL.*SVC_SD_EMAIL.*SVC_SD_API_TOKEN/);
    }
  });

  it('documents the service-desk routes in the OpenAPI document', async () => {
    const doc = await sys.http({ method: 'GET', url: '/swagger/json' });
    expectStatus(doc, 200);
    const paths = Object.keys((doc.json() as { paths: Record<string, unknown> }).paths);
    for (const p of [
      '/api/v1/service-desk/tickets',
      '/api/v1/service-desk/tickets/{issueKey}/attachments',
      '/api/v1/service-desk/admin/organizations/{id}',
      '/api/v1/service-desk/reports/export',
    ]) {
      expect(paths).toContain(p);
    }
  });

  it('a sync that dies mid-way resumes from the last committed page', async () => {
    const local = new TrackerPeer({ perOrg: [45, 1, 1] });
    await local.start();
    try {
      const org = local.names.orgs[0]!.id;
      await mapOrganization(sys, local, org);
      const engine = await syncEngineFor(sys, local, log, stores, 10);
      const stored = (): Promise<number> => storedCount(sys, org);
      try {
        // The third search of this organization (its third page) fails with a 500, which is not retried.
        let seen = 0;
        local.faults.push({
          match: (_m, p, body) =>
            p === '/rest/api/3/search/jql' && String(body?.jql).startsWith(`cf[10002] = ${org} `) && ++seen === 3,
          status: 500,
        });
        const first = await engine.run();
        expect(first.organizations.find((o) => o.organization_id === org)?.error).toMatch(/502|answered 500/);
        const mid = await stored();
        expect(mid).toBe(20);
        const [state] = await sys.sql<{ watermark: Date | string | null; full_load_completed_at: string | null }>(
          `SELECT watermark, full_load_completed_at FROM sd_sync_state WHERE organization_id = ?`,
          [org],
        );
        expect(state!.watermark).not.toBeNull();
        expect(state!.full_load_completed_at).toBeNull();
        const before = local.log.length;
        const second = await engine.run();
        expect(second.organizations.find((o) => o.organization_id === org)).toMatchObject({
          error: null,
          full_load: true,
        });
        expect(await stored()).toBe(local.requestsOf(org).length);
        // It resumed from the saved watermark (less the 120 s overlap, in the account's time zone), not from the start.
        const since = new Date(new Date(state!.watermark!).getTime() - 120_000);
        const p = Object.fromEntries(
          new Intl.DateTimeFormat('en-GB', {
            timeZone: PEER_TIMEZONE,
            year: 'numeric',
            month: '2-digit',
            day: '2-digit',
            hour: '2-digit',
            minute: '2-digit',
            hourCycle: 'h23',
          })
            .formatToParts(since)
            .map((x) => [x.type, x.value]),
        );
        const searches = local.log
          .slice(before)
          .filter((l) => l.path === '/rest/api/3/search/jql' && l.jql?.startsWith(`cf[10002] = ${org} `));
        expect(searches.length).toBeGreaterThan(0);
        for (const search of searches)
          expect(search.jql).toBe(
            `cf[10002] = ${org} AND updated >= "${p.year}/${p.month}/${p.day} ${p.hour}:${p.minute}" ORDER BY updated ASC, key ASC`,
          );
        // ...so the pages before the crash were not read again: fewer than all requests came back.
        expect(second.organizations.find((o) => o.organization_id === org)!.requests).toBeLessThan(
          local.requestsOf(org).length,
        );
      } finally {
        await engine.stop();
      }
    } finally {
      await cleanPeerData(sys, local);
      await local.stop();
    }
  });
});
