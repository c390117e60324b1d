import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, userWith } from '../identity/admin-support.ts';
import { firstResponseAt, FRT_GOAL_MS, TrackerPeer, TTR_GOAL_MS, type PeerIssue } from '../support/tracker-peer.ts';
import {
  get,
  HOUR,
  resolutionBreached,
  round2,
  SD,
  startSdSystem,
  stopSdSystem,
  syncNow,
  type SdSystem,
} from './support.ts';

/**
 * A site whose SLA fields the sync cannot find (not in /field, not in the search hits): each request's SLAs come from
 * /rest/servicedeskapi/request/{key}/sla instead. Without that fallback every figure below would be empty.
 */
let s: SdSystem;
let userA: string;

beforeAll(async () => {
  const peer = new TrackerPeer({ perOrg: [30, 10, 2] });
  peer.slaInSearch = false;
  s = await startSdSystem({}, peer);
  await syncNow(s);
  userA = (await userWith(s.sys, 'Client', s.clientA.id)).token;
});
afterAll(() => stopSdSystem(s));

interface Cycle {
  name: string;
  state: 'completed' | 'ongoing';
  start: string | null;
  stop: string | null;
  breached: boolean;
  goal_ms: number | null;
  elapsed_ms: number | null;
}

/** The peer's dates on the SLA endpoint are whole seconds. */
const near = (at: string | null, ms: number): boolean => at !== null && Math.abs(Date.parse(at) - ms) < 1000;

describe('SLA fallback', () => {
  it('reads every synced request’s SLAs from the request’s /sla endpoint and stores cycles and figures from it', async () => {
    const orgA: PeerIssue[] = s.peer.requestsOf(s.orgA);
    // Asked once per request of the mapped organizations (the first sync may have been the mapping's own).
    for (const p of s.peer.requestsOf(s.orgA, s.orgB))
      expect(
        s.peer.count('GET', new RegExp(`^/rest/servicedeskapi/request/${p.key}/sla$`)),
        p.key,
      ).toBeGreaterThanOrEqual(1);
    expect(orgA.some((p) => firstResponseAt(p) !== null)).toBe(true);
    expect(orgA.some((p) => p.resolved !== null)).toBe(true);
    const now = Date.now();
    for (const p of orgA) {
      const res = await get(s, userA, `${SD}/tickets/${p.key}`);
      expectStatus(res, 200);
      const sla = res.json().data.sla as {
        first_response_sla_met: number;
        first_response_hours: number | null;
        resolution_sla_status: string;
        resolution_hours: number | null;
        cycles: Cycle[];
      };
      const fr = firstResponseAt(p);
      const frt = sla.cycles.filter((c) => c.name === 'Time to first response');
      const ttr = sla.cycles.filter((c) => c.name === 'Time to resolution');
      expect(frt, p.key).toHaveLength(1);
      expect(ttr, p.key).toHaveLength(1);
      expect(near(frt[0]!.start, p.created), p.key).toBe(true);
      expect(frt[0]!.goal_ms).toBe(FRT_GOAL_MS);
      expect(ttr[0]!.goal_ms).toBe(TTR_GOAL_MS);
      if (fr !== null) {
        expect(frt[0]).toMatchObject({
          state: 'completed',
          elapsed_ms: fr - p.created,
          breached: fr - p.created > FRT_GOAL_MS,
        });
        expect(near(frt[0]!.stop, fr)).toBe(true);
        expect(sla.first_response_hours).toBe(round2((fr - p.created) / HOUR));
        expect(sla.first_response_sla_met).toBe(fr - p.created <= FRT_GOAL_MS ? 1 : 0);
      } else {
        expect(frt[0]).toMatchObject({ state: 'ongoing', stop: null, breached: now - p.created > FRT_GOAL_MS });
        expect(sla.first_response_hours).toBeNull();
        expect(sla.first_response_sla_met).toBe(0);
      }
      if (p.resolved !== null) {
        expect(ttr[0]).toMatchObject({
          state: 'completed',
          elapsed_ms: p.resolved - p.created,
          breached: resolutionBreached(p, now),
        });
        expect(sla.resolution_sla_status).toBe(resolutionBreached(p, now) ? 'breached' : 'met');
      } else {
        expect(ttr[0]).toMatchObject({ state: 'ongoing', stop: null, breached: resolutionBreached(p, now) });
        expect(sla.resolution_sla_status).toBe(resolutionBreached(p, now) ? 'breached' : 'in_progress');
      }
    }
  });
});
