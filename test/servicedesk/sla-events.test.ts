import type { Subscription } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlaChanged } from '../../contracts/domains/servicedesk.ts';
import { wireDurableSubject } from '../../platform/namespace.ts';
import { waitFor } from '../support/processes.ts';
import { FRT_GOAL_MS, TrackerPeer, TTR_GOAL_MS, type PeerIssue } from '../support/tracker-peer.ts';
import { HOUR, startSdSystem, stopSdSystem, syncNow, type SdSystem } from './support.ts';

/**
 * The sync announces a request's SLA cycle when it differs from the stored copy (svc.evt.servicedesk.sla), to the
 * clients whose mappings cover the request; a re-sync of unchanged requests announces nothing. Watched with a plain
 * subscription, so a publish the stream would have dropped as a duplicate still counts here.
 */
let s: SdSystem;
let sub: Subscription;
const events: SlaChanged[] = [];
/** The requests this file follows: a mapped one, one in two mapped organizations, two no client sees. */
let mapped: PeerIssue;
let shared: PeerIssue;
let otherProject: PeerIssue;
let unmapped: PeerIssue;

/** This file's peer's requests (its project keys are its own). */
const ours = (): SlaChanged[] =>
  events.filter((e) => [s.peer.names.sup, s.peer.names.ops].includes(e.issue_key.split('-')[0]!));
const of = (issue: PeerIssue): SlaChanged[] => events.filter((e) => e.issue_key === issue.key);
const iso = (ms: number): string => new Date(ms).toISOString();
/** Whatever the sync published has reached the subscription (the server delivers it ahead of the flush's answer). */
const settled = async (): Promise<void> => {
  await s.sys.nc.flush();
  await new Promise((r) => setTimeout(r, 200));
};
/** The peer's change as the tracker makes one: the request's update time moves, so an incremental sync reads it. */
const touch = (issue: PeerIssue): void => {
  issue.updated = Date.now();
};

beforeAll(async () => {
  s = await startSdSystem({}, new TrackerPeer({ perOrg: [4, 3, 2] }));
  // The mappings' own background load first: what it published is before this file's subscription.
  await syncNow(s);
  sub = s.sys.nc.subscribe(wireDurableSubject('svc.evt.servicedesk.sla'));
  void (async () => {
    for await (const m of sub) events.push(SlaChanged.parse(m.json()));
  })();
  const at = Date.now() - 60_000;
  mapped = s.peer.open({ orgIds: [s.orgA], at, summary: 'VPN down' });
  shared = s.peer.open({ orgIds: [s.orgA, s.orgB], at, summary: 'Shared printer' });
  // Synced with organization A, but in the project of service desk 2, which client A's mapping leaves out.
  otherProject = s.peer.open({ orgIds: [s.orgA], at, desk: s.peer.names.desks[1]! });
  unmapped = s.peer.open({ orgIds: [s.orgUnmapped], at });
  for (const i of [mapped, shared, otherProject, unmapped]) touch(i);
}, 120_000);
afterAll(async () => {
  sub?.unsubscribe();
  await stopSdSystem(s);
});

describe('SLA events of the sync', () => {
  it('announces a new request’s running cycles, with their breach times, to the clients that see it', async () => {
    await syncNow(s);
    await waitFor(() => of(mapped).length >= 2 && of(shared).length >= 2, 10_000, 'the new requests’ SLA events');
    await settled();
    const byMetric = (issue: PeerIssue, metric: SlaChanged['metric']): SlaChanged[] =>
      of(issue).filter((e) => e.metric === metric);
    expect(byMetric(mapped, 'resolution')).toEqual([
      {
        issue_key: mapped.key,
        summary: 'VPN down',
        client_ids: [s.clientA.id],
        metric: 'resolution',
        state: 'ongoing',
        breach_at: iso(mapped.created + TTR_GOAL_MS),
        at: iso(mapped.updated),
      },
    ]);
    expect(byMetric(mapped, 'first_response')).toMatchObject([
      { state: 'ongoing', breach_at: iso(mapped.created + FRT_GOAL_MS) },
    ]);
    // Synced with both organizations in one run: told once per metric, to both clients.
    expect(of(shared)).toHaveLength(2);
    for (const e of of(shared)) expect(e.client_ids).toEqual([s.clientA.id, s.clientB.id].sort());
    // Stored, but no client sees it; and a request of an organization nobody maps is not even read.
    const stored = await s.sys.sql<{ issue_key: string }>(`SELECT issue_key FROM sd_requests WHERE issue_key IN (?)`, [
      [otherProject.key, unmapped.key],
    ]);
    expect(stored.map((r) => r.issue_key)).toEqual([otherProject.key]);
    expect(of(otherProject)).toEqual([]);
    expect(of(unmapped)).toEqual([]);
  });

  it('announces nothing when the requests are synced again unchanged, incrementally or in a full load', async () => {
    const before = ours().length;
    await syncNow(s);
    await settled();
    expect(ours()).toHaveLength(before);
    await s.sys.sql(
      `UPDATE sd_sync_state SET watermark = NULL, full_load_completed_at = NULL WHERE organization_id IN (?)`,
      [[s.orgA, s.orgB]],
    );
    const report = await syncNow(s);
    expect(report.organizations.filter((o) => o.organization_id === s.orgA)).toMatchObject([{ full_load: true }]);
    await settled();
    expect(ours()).toHaveLength(before);
  });

  it('announces only the metric whose cycle changed: a first response in time is met', async () => {
    const before = of(mapped).length;
    s.peer.move(mapped.key, 'In Progress');
    await syncNow(s);
    await waitFor(() => of(mapped).length > before, 10_000, 'the first response event');
    await settled();
    expect(of(mapped).slice(before)).toEqual([
      expect.objectContaining({ metric: 'first_response', state: 'met', breach_at: null, at: iso(mapped.updated) }),
    ]);
  });

  it('announces a breach when the tracker reports the running cycle past its goal', async () => {
    const before = of(mapped).length;
    // The peer's cycles run from the request's creation: an older one puts the resolution cycle past its goal.
    mapped.created = Date.now() - TTR_GOAL_MS - HOUR;
    touch(mapped);
    await syncNow(s);
    await waitFor(
      () =>
        of(mapped)
          .slice(before)
          .some((e) => e.metric === 'resolution'),
      10_000,
      'the resolution breach',
    );
    await settled();
    const fresh = of(mapped).slice(before);
    expect(fresh.filter((e) => e.metric === 'resolution')).toEqual([
      {
        issue_key: mapped.key,
        summary: 'VPN down',
        client_ids: [s.clientA.id],
        metric: 'resolution',
        state: 'breached',
        breach_at: iso(mapped.created + TTR_GOAL_MS),
        at: iso(mapped.updated),
      },
    ]);
    // The first response, two days after the creation now, was late too: a completed cycle has no breach time.
    expect(fresh.filter((e) => e.metric === 'first_response')).toMatchObject([{ state: 'breached', breach_at: null }]);
    const [row] = await s.sys.sql<{ sla_facts: unknown }>(`SELECT sla_facts FROM sd_requests WHERE issue_key = ?`, [
      mapped.key,
    ]);
    expect(row?.sla_facts).toMatchObject({
      resolution: { state: 'breached', breach_at: iso(mapped.created + TTR_GOAL_MS) },
      first_response: { state: 'breached', breach_at: null },
    });
    // Synced again: the breach is told once.
    await syncNow(s);
    await settled();
    expect(of(mapped).slice(before)).toHaveLength(fresh.length);
  });
});
