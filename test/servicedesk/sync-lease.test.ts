import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import type { KvStore } from '../../platform/stores/kv.ts';
import type { SyncEngine } from '../../actors/servicedesk/sync/engine.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { TrackerPeer } from '../support/tracker-peer.ts';
import { cleanPeerData, mapOrganization, storedCount, syncEngineFor } from './support.ts';

/** "One instance at a time": two instances' sync engines share the lease in JetStream KV. */
const log = createLogger('silent');
let sys: TestSystem;
let peer: TrackerPeer;
let org: string;
const stores: KvStore[] = [];

/** A sync engine as one instance of the actors builds it (its own tracker client and Valkey connection). */
const instance = (): Promise<SyncEngine> => syncEngineFor(sys, peer, log, stores, 5);
const stored = (): Promise<number> => storedCount(sys, org);

beforeAll(async () => {
  peer = new TrackerPeer({ perOrg: [12, 1, 1] });
  await peer.start();
  // The system's own service desk is not configured, so its actor runs no sync: only the two engines below compete.
  sys = await startTestSystem({
    SVC_ACTORS: 'identity,servicedesk',
    SVC_SD_BASE_URL: '',
    SVC_SD_EMAIL: '',
    SVC_SD_API_TOKEN: '',
  });
  org = peer.names.orgs[0]!.id;
  await mapOrganization(sys, peer, org);
});
afterAll(async () => {
  await cleanPeerData(sys, peer);
  await Promise.all(stores.map((s) => s.close()));
  await sys?.stop();
  await peer.stop();
});

describe('the sync lease', () => {
  it('lets one instance sync at a time: the other is refused (409) until the holder lets go', async () => {
    const [a, b] = [await instance(), await instance()];
    try {
      // Slow tracker answers keep A's run going while B asks.
      peer.delayMs = 150;
      const first = a.run();
      for (let i = 0; i < 100 && !peer.log.some((l) => l.path === '/rest/api/3/search/jql'); i++)
        await new Promise((r) => setTimeout(r, 20));
      const searchesBefore = peer.log.filter((l) => l.path === '/rest/api/3/search/jql').length;
      await expect(b.run()).rejects.toMatchObject({ code: 'conflict' });
      const report = await first;
      peer.delayMs = 0;
      expect(report.organizations.find((o) => o.organization_id === org)).toMatchObject({
        error: null,
        full_load: true,
      });
      expect(await stored()).toBe(peer.requestsOf(org).length);
      // B's refusal read nothing from the tracker: every search after B asked belongs to A's run (its later pages).
      const searchesOfA = peer.log.filter((l) => l.path === '/rest/api/3/search/jql').length - searchesBefore;
      expect(searchesOfA).toBeLessThanOrEqual(Math.ceil(peer.requestsOf(org).length / 5) + 1);
      // A holds the lease until it expires or A lets it go (shutdown): B is still refused, then takes over.
      await expect(b.run()).rejects.toMatchObject({ code: 'conflict' });
      await a.stop();
      const second = await b.run();
      expect(second.organizations.find((o) => o.organization_id === org)).toMatchObject({ error: null });
      // Now B holds it, and A (stopped) could not run anyway; a third instance is refused.
      const c = await instance();
      try {
        await expect(c.run()).rejects.toMatchObject({ code: 'conflict' });
      } finally {
        await c.stop();
      }
    } finally {
      peer.delayMs = 0;
      await a.stop();
      await b.stop();
    }
  }, 30_000);
});
