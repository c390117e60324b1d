import type { LightMyRequestResponse } from 'fastify';
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Logger } from '../../platform/logger.ts';
import { openValkeyKv, type KvStore } from '../../platform/stores/kv.ts';
import { SyncEngine } from '../../actors/servicedesk/sync/engine.ts';
import { TrackerApi } from '../../actors/servicedesk/tracker/api.ts';
import { TokenBucket } from '../../actors/servicedesk/tracker/bucket.ts';
import { TrackerClient } from '../../actors/servicedesk/tracker/client.ts';
import { expectStatus, userWith } from '../identity/admin-support.ts';
import { createClient } from '../support/identity.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import {
  categoryOf,
  PEER_EMAIL,
  PEER_TOKEN,
  PRIORITIES,
  TrackerPeer,
  type PeerIssue,
} from '../support/tracker-peer.ts';

/** Shared set-up of the service-desk tests: the tracker peer, a system pointed at it, two clients mapped to two organizations. */
export interface SdSystem {
  sys: TestSystem;
  peer: TrackerPeer;
  /** Super admin token. */
  root: string;
  clientA: { id: string };
  clientB: { id: string };
  orgA: string;
  orgB: string;
  orgUnmapped: string;
}

export const SD = '/api/v1/service-desk';

/** `peer`: one set up by the caller (switches that must hold before the mappings' first sync). */
export async function startSdSystem(
  overrides: Record<string, string> = {},
  peer = new TrackerPeer(),
): Promise<SdSystem> {
  await peer.start();
  const sys = await startTestSystem({
    SVC_ACTORS: 'identity,servicedesk',
    SVC_SD_BASE_URL: peer.url,
    SVC_SD_EMAIL: PEER_EMAIL,
    SVC_SD_API_TOKEN: PEER_TOKEN,
    SVC_SD_SYNC_INTERVAL_SECONDS: '0',
    ...overrides,
  });
  const root = (await userWith(sys)).token;
  const [clientA, clientB] = [await createClient(sys), await createClient(sys)];
  const [orgA, orgB, orgUnmapped] = peer.names.orgs.map((o) => o.id) as [string, string, string];
  const call = (payload: unknown): Promise<LightMyRequestResponse> =>
    sys.http({
      method: 'POST',
      url: `${SD}/admin/organizations`,
      token: root,
      payload: payload as Record<string, unknown>,
    });
  expectStatus(await call({ client_id: clientA.id, organization_id: orgA, service_desk_ids: ['1'] }), 201);
  expectStatus(await call({ client_id: clientB.id, organization_id: orgB, service_desk_ids: ['1', '2'] }), 201);
  return { sys, peer, root, clientA, clientB, orgA, orgB, orgUnmapped };
}

export async function stopSdSystem(s: SdSystem | undefined): Promise<void> {
  if (!s) return;
  try {
    await cleanPeerData(s.sys, s.peer);
  } finally {
    await s.sys.stop();
    await s.peer.stop();
  }
}

/**
 * Removes what a run left in the shared database for its peer's organizations and projects: otherwise every later
 * sync (of any run) would go on searching organizations whose peer is gone.
 */
export async function cleanPeerData(sys: TestSystem, peer: TrackerPeer): Promise<void> {
  const orgs = peer.names.orgs.map((o) => o.id);
  const projects = [peer.names.sup, peer.names.ops, peer.names.eng];
  await sys.sql(`DELETE FROM sd_mappings WHERE organization_id IN (?)`, [orgs]);
  await sys.sql(`DELETE FROM sd_sync_state WHERE organization_id IN (?)`, [orgs]);
  await sys.sql(`DELETE FROM sd_pending WHERE organization_id IN (?)`, [orgs]);
  await sys.sql(`DELETE FROM sd_requests WHERE project_key IN (?)`, [projects]);
  await sys.sql(`DELETE FROM sd_actions WHERE split_part(issue_key, '-', 1) IN (?)`, [projects]);
}

export async function syncNow(s: SdSystem): Promise<{
  organizations: { organization_id: string; requests: number; full_load: boolean; error: string | null }[];
}> {
  const res = await s.sys.http({ method: 'POST', url: `${SD}/admin/sync`, token: s.root });
  expectStatus(res, 200);
  const report = res.json().data as {
    organizations: { organization_id: string; requests: number; full_load: boolean; error: string | null }[];
  };
  for (const o of report.organizations) expect(o.error, `sync of ${o.organization_id}`).toBeNull();
  return report;
}

/** What the export writes for a cell a spreadsheet would run as a formula: a leading apostrophe. */
export const csvCell = (v: string): string => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v);

export const get = async (s: SdSystem, token: string, url: string): Promise<LightMyRequestResponse> =>
  s.sys.http({ method: 'GET', url, token });

// ---- expectations computed by hand from what the peer holds ------------------------------------------------------

const HOUR = 3_600_000;
const DAY = 86_400_000;
export const round2 = (n: number): number => Math.round(n * 100) / 100;

export const priorityRank = (p: string): number => 5 - PRIORITIES.indexOf(p as (typeof PRIORITIES)[number]);
export const startedAt = (i: PeerIssue): number =>
  i.histories.find((h) => categoryOf(h.to) !== 'new')?.created ?? i.created;
export const frtMs = (i: PeerIssue): number | null => (i.histories[0] ? i.histories[0].created - i.created : null);
export const FRT_GOAL = 4 * HOUR;
export const TTR_GOAL = 48 * HOUR;
export const resolutionBreached = (i: PeerIssue, now: number): boolean => (i.resolved ?? now) - i.created > TTR_GOAL;
export const dueEnd = (due: string): number => Date.parse(`${due}T00:00:00.000Z`) + DAY;
export const onTime = (i: PeerIssue, now: number): boolean =>
  i.due ? (i.resolved ?? now) <= dueEnd(i.due) : !resolutionBreached(i, now);

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 1) return sorted[0]!;
  const rank = p * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo);
}

export const avg = (xs: number[]): number | null =>
  xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length;
export { HOUR, DAY };

/** A new client mapped (straight in the table) to `organizationId` and the peer's support project. */
export async function mapOrganization(sys: TestSystem, peer: TrackerPeer, organizationId: string): Promise<void> {
  const client = await createClient(sys);
  await sys.sql(
    `INSERT INTO sd_mappings (id, client_id, organization_id, organization_name, service_desk_ids, project_keys) VALUES (?, ?, ?, 'Acme', '{1}', ?::text[])`,
    [randomUUID(), client.id, organizationId, `{${peer.names.sup}}`],
  );
}

/**
 * A sync engine against `peer` as one instance of the actors builds it: its own tracker client and Valkey connection
 * (pushed on `stores`, for the caller to close), the system's database and broker.
 */
export async function syncEngineFor(
  sys: TestSystem,
  peer: TrackerPeer,
  log: Logger,
  stores: KvStore[],
  pageSize: number,
): Promise<SyncEngine> {
  return new SyncEngine(await sys.stores.orm(), await trackerApiFor(peer, log, stores), sys.nc, log, {
    intervalSeconds: 0,
    overlapSeconds: 120,
    pageSize,
  });
}

/** The tracker's API at `peer`, as one instance builds it: its own client and Valkey connection (pushed on `stores`). */
export async function trackerApiFor(peer: TrackerPeer, log: Logger, stores: KvStore[]): Promise<TrackerApi> {
  const kv = await openValkeyKv(
    process.env.SVC_VALKEY_URL ?? 'redis://127.0.0.1:6379',
    log,
    `svc-test:${randomUUID().slice(0, 8)}:`,
  );
  stores.push(kv);
  return new TrackerApi(
    new TrackerClient(
      { baseUrl: peer.url, email: PEER_EMAIL, apiToken: PEER_TOKEN, timeoutMs: 5_000 },
      new TokenBucket(kv, log),
      log,
    ),
  );
}

/** How many requests of `organizationId` the read store holds. */
export const storedCount = async (sys: TestSystem, organizationId: string): Promise<number> =>
  (
    await sys.sql<{ n: number }>(`SELECT count(*)::int AS n FROM sd_requests WHERE organization_ids @> ?::text[]`, [
      `{${organizationId}}`,
    ])
  )[0]!.n;

const frtBreached = (i: PeerIssue, now: number): boolean => {
  const f = frtMs(i);
  return f !== null ? f > FRT_GOAL : now - i.created > FRT_GOAL;
};

/**
 * The metrics routes' figures for `set` (one organization's requests), computed from what the peer holds: the metric
 * definitions of docs/api/service-desk.md#metrics-field-names-and-definitions applied to the peer's own times and
 * goals, never to what the service stored.
 */
export function expectedMetrics(set: readonly PeerIssue[], now: number) {
  const frts = set.map(frtMs).filter((x): x is number => x !== null);
  const resolved = set.filter((i) => i.resolved !== null);
  const days = resolved.map((i) => Math.max(0, (i.resolved! - startedAt(i)) / DAY)).sort((a, b) => a - b);
  return {
    sla: {
      total_requests: set.length,
      avg_first_response_hours: round2(avg(frts)! / HOUR),
      avg_resolution_hours: round2(avg(resolved.map((i) => i.resolved! - i.created))! / HOUR),
      first_response_sla_percent: round2((100 * frts.filter((x) => x <= FRT_GOAL).length) / frts.length),
      resolution_sla_percent: round2(
        (100 * resolved.filter((i) => !resolutionBreached(i, now)).length) / resolved.length,
      ),
      breach_count: set.filter((i) => frtBreached(i, now) || resolutionBreached(i, now)).length,
    },
    delivery: {
      resolved_count: resolved.length,
      avg_cycle_time_days: round2(avg(days)!),
      median_cycle_time_days: round2(percentile(days, 0.5)),
      p90_cycle_time_days: round2(percentile(days, 0.9)),
      on_time_percent: round2((100 * resolved.filter((i) => onTime(i, now)).length) / resolved.length),
    },
    summary: {
      open_count: set.filter((i) => categoryOf(i.status) !== 'done').length,
      resolved_count: set.filter((i) => categoryOf(i.status) === 'done').length,
      sla_compliance_percent: round2(
        (100 * set.filter((i) => !frtBreached(i, now) && !resolutionBreached(i, now)).length) / set.length,
      ),
    },
  };
}
