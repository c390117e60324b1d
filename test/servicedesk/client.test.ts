import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../actors/runtime/logger.ts';
import { openValkeyKv, type KvStore } from '../../actors/runtime/stores/kv.ts';
import { TokenBucket } from '../../actors/servicedesk/tracker/bucket.ts';
import { TrackerClient } from '../../actors/servicedesk/tracker/client.ts';
import { expectStatus } from '../identity/admin-support.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { PEER_EMAIL, PEER_TOKEN, TrackerPeer } from '../support/tracker-peer.ts';

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
  return new TrackerClient({ baseUrl: peer.url, email: PEER_EMAIL, apiToken: PEER_TOKEN, timeoutMs: 5_000 }, new TokenBucket(kv, log), log);
}

describe('the token bucket shared through Valkey', () => {
  it('holds 50 calls per second, burst 10, across instances, under a burst of 500 calls', async () => {
    const prefix = `svc-test:${randomUUID().slice(0, 8)}:`;
    const [one, two] = [await instance(prefix), await instance(prefix)];
    const before = peer.log.length;
    const started = Date.now();
    await Promise.all(Array.from({ length: 500 }, (_, i) => (i % 2 === 0 ? one : two).call({ method: 'GET', path: '/rest/api/3/myself', idempotent: true })));
    const elapsed = Date.now() - started;
    const times = peer.log.slice(before).map((l) => l.at).sort((a, b) => a - b);
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
    const refused = await client.call({ method: 'GET', path: '/rest/api/3/myself', deadline: Date.now() + 300 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'too_many_requests' });
    await Promise.all(queued);
  });
});

describe('without configuration', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ SVC_ACTORS: 'identity,servicedesk', SVC_SD_BASE_URL: '', SVC_SD_EMAIL: '', SVC_SD_API_TOKEN: '', SVC_ENABLE_DEBUG_ENDPOINTS: 'true' });
  });
  afterAll(() => sys?.stop());

  it('every service-desk route answers 503 naming the variables', async () => {
    const { userWith } = await import('../identity/admin-support.ts');
    const root = (await userWith(sys)).token;
    for (const url of ['/api/v1/service-desk/tickets?organization_id=1', '/api/v1/service-desk/admin/organizations', '/api/v1/service-desk/metrics/summary?organization_id=1', '/api/v1/service-desk/tickets/SUP-1/comments']) {
      const res = await sys.http({ method: 'GET', url, token: root });
      expectStatus(res, 503);
      expect(res.json().error.message).toMatch(/SVC_SD_BASE_URL.*SVC_SD_EMAIL.*SVC_SD_API_TOKEN/);
    }
  });

  it('documents the service-desk routes in the OpenAPI document', async () => {
    const doc = await sys.http({ method: 'GET', url: '/swagger/json' });
    expectStatus(doc, 200);
    const paths = Object.keys((doc.json() as { paths: Record<string, unknown> }).paths);
    for (const p of ['/api/v1/service-desk/tickets', '/api/v1/service-desk/tickets/{issueKey}/attachments', '/api/v1/service-desk/admin/organizations/{id}', '/api/v1/service-desk/reports/export']) {
      expect(paths).toContain(p);
    }
  });
});
