import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, userWith } from '../identity/admin-support.ts';
import { CLOUD_SITE, resolutionPaused, TrackerPeer, type PeerIssue } from '../support/tracker-peer.ts';
import {
  expectedMetrics,
  get,
  resolutionBreached,
  SD,
  startSdSystem,
  stopSdSystem,
  syncNow,
  type SdSystem,
} from './support.ts';

/**
 * A site whose SLAs carry other names than the defaults and whose /field does not list the Organizations field: the
 * operator names the three fields (SVC_SD_SLA_RESOLUTION_FIELD, SVC_SD_SLA_FIRST_RESPONSE_FIELD,
 * SVC_SD_ORGANIZATIONS_FIELD). Without them the sync would search customfield_10002 and find no SLA at all.
 */
const RENAMED = {
  ...CLOUD_SITE,
  names: { firstResponse: 'First reply (Gold)', resolution: 'Resolution (Gold)' },
  unlistedOrganizations: true,
};
let s: SdSystem;
let userA: string;

beforeAll(async () => {
  s = await startSdSystem(
    {
      SVC_SD_SLA_RESOLUTION_FIELD: RENAMED.resolution,
      SVC_SD_SLA_FIRST_RESPONSE_FIELD: RENAMED.firstResponse,
      SVC_SD_ORGANIZATIONS_FIELD: RENAMED.organizations,
    },
    new TrackerPeer({ perOrg: [40, 5, 1], site: RENAMED }),
  );
  await syncNow(s);
  userA = (await userWith(s.sys, 'Client', s.clientA.id)).token;
});
afterAll(() => stopSdSystem(s));

describe('fields named by the operator', () => {
  it('are the ones searched and read: every request stored, its resolution SLA and the metrics as the peer’s data say', async () => {
    const orgA: PeerIssue[] = s.peer.requestsOf(s.orgA);
    for (const search of s.peer.log.filter((l) => l.path === '/rest/api/3/search/jql'))
      expect(search.jql).toMatch(/^cf\[10106\] = \d+ /);
    const now = Date.now();
    for (const p of orgA) {
      const res = await get(s, userA, `${SD}/tickets/${p.key}`);
      expectStatus(res, 200);
      const breached = resolutionBreached(p, now);
      const want =
        p.resolved !== null
          ? breached
            ? 'breached'
            : 'met'
          : breached
            ? 'breached'
            : resolutionPaused(s.peer.site, p)
              ? 'paused'
              : 'in_progress';
      expect(res.json().data.sla.resolution_sla_status, p.key).toBe(want);
    }
    const want = expectedMetrics(orgA, now);
    const sla = (await get(s, userA, `${SD}/metrics/sla`)).json().data;
    expect(sla.total_requests).toBe(orgA.length);
    expect(sla.resolution_sla_percent).toBeCloseTo(want.sla.resolution_sla_percent, 1);
    expect(sla.first_response_sla_percent).toBeCloseTo(want.sla.first_response_sla_percent, 1);
    expect(sla.breach_count).toBe(want.sla.breach_count);
    // The SLA values came with the search, not from each request's /sla.
    expect(s.peer.count('GET', /^\/rest\/servicedeskapi\/request\/[^/]+\/sla$/)).toBe(0);
  });
});
