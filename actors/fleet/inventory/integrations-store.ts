import type { EntityManager } from '@mikro-orm/postgresql';
import type { IntegrationReport } from '../../../contracts/domains/agent-telemetry.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { firstByKey } from './dedupe.ts';
import { pgJson } from './pg-values.ts';

/**
 * Integration reports reach the store from two places: every heartbeat and every inventory snapshot. Both upsert per
 * (host, integration); only a snapshot (the full truth of the host) removes the integrations it does not list.
 *
 * `at` is the server's time of receipt (heartbeats and snapshots alike; agents' clocks are not trusted), and
 * `last_seen_at` only moves forward: a report processed after a newer one of the same integration changes nothing.
 * Call inside the transaction that holds (or has updated) the host row, so heartbeats and snapshots of one host take
 * their locks in the same order.
 */
export async function upsertIntegrations(
  em: EntityManager,
  host: { id: string; client_id: string },
  reports: readonly IntegrationReport[],
  at: Date,
): Promise<void> {
  await upsertIntegrationsOfHosts(em, [{ host, reports, at }]);
}

/**
 * The same for the reports of many hosts in two statements (heartbeats are written in batches). A host's repeated
 * integration keeps its first report; across entries of one host, the latest `at` wins.
 */
export async function upsertIntegrationsOfHosts(
  em: EntityManager,
  entries: readonly { host: { id: string; client_id: string }; reports: readonly IntegrationReport[]; at: Date }[],
): Promise<void> {
  // ON CONFLICT DO UPDATE cannot touch a row twice in one statement: one row per (host, integration).
  const byKey = new Map<string, { host_id: string; client_id: string; at: string; r: IntegrationReport }>();
  for (const e of entries) {
    const { kept } = firstByKey(e.reports, (r) => r.integration_id);
    for (const r of kept) {
      const key = `${e.host.id}/${r.integration_id}`;
      const prev = byKey.get(key);
      if (!prev || prev.at < e.at.toISOString())
        byKey.set(key, { host_id: e.host.id, client_id: e.host.client_id, at: e.at.toISOString(), r });
    }
  }
  if (byKey.size === 0) return;
  const rows = [...byKey.values()].map(({ host_id, client_id, at, r }) => ({
    host_id,
    client_id,
    at,
    integration_id: r.integration_id,
    collector_name: r.collector_name,
    status: r.status,
    status_message: r.status_message,
    enabled: r.enabled,
    // Absent config stays absent (SQL NULL): the stored one is kept.
    ...(r.config !== undefined ? { config: r.config } : {}),
  }));
  // An integration the catalogue does not know is added, named by its id, visible only where a host reports it.
  await sql(
    em,
    `INSERT INTO integrations (id, name, category, origin) SELECT DISTINCT id, id, 'other', 'agent' FROM jsonb_array_elements_text(?::jsonb) AS t(id)
     ON CONFLICT (id) DO NOTHING`,
    [pgJson([...new Set(rows.map((r) => r.integration_id))])],
  );
  await sql(
    em,
    `INSERT INTO host_integrations (id, host_id, client_id, integration_id, collector_name, status, status_message, enabled, config, config_updated_at, last_seen_at)
     SELECT gen_random_uuid(), r.host_id, r.client_id, r.integration_id, r.collector_name, r.status, r.status_message, r.enabled,
            COALESCE(r.config, '{}'::jsonb), CASE WHEN r.config IS NULL THEN NULL ELSE r.at END, r.at
       FROM jsonb_to_recordset(?::jsonb) AS r(host_id uuid, client_id uuid, at timestamptz, integration_id text, collector_name text, status text, status_message text, enabled boolean, config jsonb)
     ON CONFLICT (host_id, integration_id) DO UPDATE SET
       client_id = excluded.client_id,
       collector_name = excluded.collector_name,
       status = excluded.status,
       status_message = excluded.status_message,
       enabled = excluded.enabled,
       config = CASE WHEN excluded.config_updated_at IS NULL THEN host_integrations.config ELSE excluded.config END,
       config_updated_at = COALESCE(excluded.config_updated_at, host_integrations.config_updated_at),
       last_seen_at = excluded.last_seen_at
     WHERE host_integrations.last_seen_at <= excluded.last_seen_at`,
    [pgJson(rows)],
  );
}

/** A snapshot's removal: integrations of the host it does not list, unless a newer report has seen them since. */
export async function removeIntegrationsNotIn(
  em: EntityManager,
  hostId: string,
  listed: readonly string[],
  at: Date,
): Promise<void> {
  await sql(
    em,
    `DELETE FROM host_integrations WHERE host_id = ? AND last_seen_at <= ? AND integration_id NOT IN (SELECT jsonb_array_elements_text(?::jsonb))`,
    [hostId, at, pgJson(listed)],
  );
}
