import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KvStore } from '../../platform/stores/kv.ts';
import { expectStatus, userWith } from '../identity/admin-support.ts';
import { capturingLogger } from '../support/log-capture.ts';
import { SiteCatalog } from '../../actors/servicedesk/tracker/site.ts';
import {
  CLOSE_AFTER_RESOLUTION,
  CLOUD_SITE,
  PEER_TIMEZONE,
  resolutionPaused,
  TrackerPeer,
  type PeerIssue,
} from '../support/tracker-peer.ts';
import {
  expectedMetrics,
  get,
  HOUR,
  onTime,
  resolutionBreached,
  SD,
  startSdSystem,
  stopSdSystem,
  syncNow,
  trackerApiFor,
  type SdSystem,
} from './support.ts';

/**
 * A tracker that lists its fields as a Jira Service Management Cloud site does: "Time to close after resolution" (an
 * SLA too, with values in every search hit) before "Time to resolution", look-alike fields, and the Organizations
 * field at its own id (customfield_10106, not the spec's customfield_10002). Every figure is checked against values
 * computed from the peer's own data.
 */
let s: SdSystem;
let userA: string;
/** Requests of the last hours: the resolution SLA states only young requests have. */
let young: { inProgress: PeerIssue; paused: PeerIssue; met: PeerIssue };

beforeAll(async () => {
  const peer = new TrackerPeer({ perOrg: [80, 20, 2], site: CLOUD_SITE });
  const now = Date.now();
  const orgIds = [peer.names.orgs[0]!.id];
  const inProgress = peer.open({ orgIds, at: now - 2 * HOUR });
  const paused = peer.open({ orgIds, at: now - 3 * HOUR });
  peer.move(paused.key, 'In Progress', now - 2 * HOUR);
  peer.move(paused.key, 'Waiting for customer', now - HOUR);
  const met = peer.open({ orgIds, at: now - 10 * HOUR });
  peer.move(met.key, 'In Progress', now - 9 * HOUR);
  peer.move(met.key, 'Resolved', now - 8 * HOUR);
  young = { inProgress, paused, met };
  s = await startSdSystem({}, peer);
  await syncNow(s);
  userA = (await userWith(s.sys, 'Client', s.clientA.id)).token;
});
afterAll(() => stopSdSystem(s));

const orgA = (): PeerIssue[] => s.peer.requestsOf(s.orgA);

/** The resolution SLA's state as the peer's own data says. */
function expectedStatus(p: PeerIssue, now: number): string {
  const breached = resolutionBreached(p, now);
  if (p.resolved !== null) return breached ? 'breached' : 'met';
  return breached ? 'breached' : resolutionPaused(s.peer.site, p) ? 'paused' : 'in_progress';
}

describe('a Jira Service Management Cloud site', () => {
  it('is searched through its own Organizations field, and every request of the organization is stored', async () => {
    const searches = s.peer.log.filter((l) => l.path === '/rest/api/3/search/jql');
    expect(searches.length).toBeGreaterThan(0);
    for (const search of searches) expect(search.jql).toMatch(/^cf\[10106\] = \d+ /);
    const stored = await s.sys.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM sd_requests WHERE organization_ids @> ?::text[]`,
      [`{${s.orgA}}`],
    );
    expect(stored[0]!.n).toBe(orgA().length);
  });

  it('metrics/sla, metrics/delivery and metrics/summary match the figures computed from the peer', async () => {
    const now = Date.now();
    const want = expectedMetrics(orgA(), now);
    const sla = (await get(s, userA, `${SD}/metrics/sla`)).json().data;
    expect(sla.total_requests).toBe(want.sla.total_requests);
    expect(sla.resolution_sla_percent).toBeCloseTo(want.sla.resolution_sla_percent, 1);
    expect(sla.first_response_sla_percent).toBeCloseTo(want.sla.first_response_sla_percent, 1);
    expect(sla.avg_first_response_hours).toBeCloseTo(want.sla.avg_first_response_hours, 1);
    expect(sla.avg_resolution_hours).toBeCloseTo(want.sla.avg_resolution_hours, 1);
    expect(sla.breach_count).toBe(want.sla.breach_count);
    const delivery = (await get(s, userA, `${SD}/metrics/delivery`)).json().data;
    expect(delivery.resolved_count).toBe(want.delivery.resolved_count);
    expect(delivery.on_time_percent).toBeCloseTo(want.delivery.on_time_percent, 1);
    expect(delivery.avg_cycle_time_days).toBeCloseTo(want.delivery.avg_cycle_time_days, 1);
    const summary = (await get(s, userA, `${SD}/metrics/summary`)).json().data;
    expect(summary).toMatchObject({ open_count: want.summary.open_count, resolved_count: want.summary.resolved_count });
    expect(summary.sla_compliance_percent).toBeCloseTo(want.summary.sla_compliance_percent, 1);
  });

  it('the ticket detail shows the resolution SLA of "Time to resolution" for met, paused, in-progress and breached requests', async () => {
    const now = Date.now();
    const seen = new Set<string>();
    for (const p of orgA()) {
      const res = await get(s, userA, `${SD}/tickets/${p.key}`);
      expectStatus(res, 200);
      const d = res.json().data as {
        sla: { resolution_sla_status: string; cycles: { name: string }[] };
        delivery: { is_on_time: number };
      };
      const status = expectedStatus(p, now);
      seen.add(status);
      expect(d.sla.resolution_sla_status, p.key).toBe(status);
      if (p.resolved !== null) expect(d.delivery.is_on_time, p.key).toBe(onTime(p, now) ? 1 : 0);
      expect(d.sla.cycles.some((c) => c.name === CLOSE_AFTER_RESOLUTION.name)).toBe(false);
    }
    expect([...seen].sort()).toEqual(['breached', 'in_progress', 'met', 'paused']);
    const statusOf = async (p: PeerIssue): Promise<string> =>
      (await get(s, userA, `${SD}/tickets/${p.key}`)).json().data.sla.resolution_sla_status;
    expect([await statusOf(young.inProgress), await statusOf(young.paused), await statusOf(young.met)]).toEqual([
      'in_progress',
      'paused',
      'met',
    ]);
  });

  it('a request is created with the site’s Organizations field, and one not yet synced is found through it', async () => {
    const res = await s.sys.http({
      method: 'POST',
      url: `${SD}/tickets`,
      token: userA,
      payload: { service_desk_id: '1', request_type_id: '10', request_field_values: { summary: 'Printer jammed' } },
    });
    expectStatus(res, 201);
    const values = s.peer.lastCreate?.requestFieldValues as Record<string, unknown>;
    expect(values).toMatchObject({ summary: 'Printer jammed', customfield_10106: [Number(s.orgA)] });
    expect(values).not.toHaveProperty('customfield_10002');
    expect(s.peer.issues.get(res.json().data.issue_key)?.orgIds).toEqual([s.orgA]);
    // The site's Organizations field is the service's to set, whatever its id.
    const own = await s.sys.http({
      method: 'POST',
      url: `${SD}/tickets`,
      token: userA,
      payload: {
        service_desk_id: '1',
        request_type_id: '10',
        request_field_values: { summary: 'x', customfield_10106: [1] },
      },
    });
    expectStatus(own, 400);
    // Raised in the tracker after the last sync: its organization is read from the tracker, not the store.
    const fresh = s.peer.open({ orgIds: [s.orgA], at: Date.now() });
    expectStatus(await get(s, userA, `${SD}/tickets/${fresh.key}/comments`), 200);
    const other = s.peer.open({ orgIds: [s.orgB], at: Date.now() });
    expectStatus(await get(s, userA, `${SD}/tickets/${other.key}/comments`), 404);
  });

  it('reads /field, /status and /myself once, not on every sync run', async () => {
    await syncNow(s);
    await syncNow(s);
    for (const path of [/^\/rest\/api\/3\/field$/, /^\/rest\/api\/3\/status$/, /^\/rest\/api\/3\/myself$/])
      expect(s.peer.count('GET', path), String(path)).toBe(1);
  });

  it('logs the fields it chose once, at the first load (the sync’s first run)', async () => {
    const { log, lines } = capturingLogger('info');
    const stores: KvStore[] = [];
    try {
      // The sync's own catalog, as the actor builds it; a fake clock takes it past its expiry.
      let now = Date.now();
      const site = new SiteCatalog(await trackerApiFor(s.peer, log, stores), {}, 60_000, log, () => now);
      const first = await site.get();
      expect(first).toMatchObject({
        resolutionSla: 'customfield_10134',
        firstResponseSla: 'customfield_10135',
        organizations: 'customfield_10106',
        timeZone: PEER_TIMEZONE,
      });
      const before = s.peer.count('GET', /^\/rest\/api\/3\/field$/);
      expect(await site.get()).toBe(first);
      expect(s.peer.count('GET', /^\/rest\/api\/3\/field$/)).toBe(before);
      now += 60_001;
      await site.get();
      expect(s.peer.count('GET', /^\/rest\/api\/3\/field$/)).toBe(before + 1);
    } finally {
      await Promise.all(stores.map((k) => k.close()));
    }
    // Read again after its expiry with the same outcome: logged once.
    const chosen = lines.filter((l) => l.msg === 'service desk fields chosen');
    expect(chosen).toHaveLength(1);
    expect(chosen[0]).toMatchObject({
      resolution_sla_field: 'customfield_10134',
      first_response_sla_field: 'customfield_10135',
      organizations_field: 'customfield_10106',
      request_type_field: 'customfield_10101',
    });
  });
});
