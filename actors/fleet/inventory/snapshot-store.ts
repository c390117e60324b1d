import type { EntityManager } from '@mikro-orm/postgresql';
import { createHash } from 'node:crypto';
import type { InventorySnapshot } from '../../../contracts/domains/agent-telemetry.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { firstByKey, keyOfFields } from './dedupe.ts';
import { pgJson, pgText } from './pg-values.ts';
import { removeIntegrationsNotIn, upsertIntegrations } from './integrations-store.ts';
import { INVENTORY_TABLES, statementsFor, type InventoryTable } from './tables.ts';

/** Which host a snapshot belongs to: the agent that sent it and the host it is enrolled on. */
export interface SnapshotTarget {
  agent_id: string;
  host_id: string;
}

export type SnapshotOutcome =
  | { kind: 'stored'; statements: number; duplicates: Record<string, number> }
  /** Not newer than the stored one (a redelivery, or a snapshot overtaken by a later one): nothing written. */
  | { kind: 'stale' }
  /** The host is gone or enrolled with another agent since: nothing written. */
  | { kind: 'no_host' };

const STATEMENTS = new Map<InventoryTable, ReturnType<typeof statementsFor>>(
  INVENTORY_TABLES.map((t) => [t, statementsFor(t)]),
);

/**
 * What a member's rows digest to, with the table's layout in it: a change of columns (a later migration) changes every
 * digest, so no table is skipped on the strength of a digest of another layout.
 */
const digestOf = (t: InventoryTable, json: string): string =>
  createHash('sha256')
    .update(JSON.stringify([t.table, t.columns, t.key ?? null, t.ordered ?? false]))
    .update(json)
    .digest('base64url');

/** One member's rows as the table takes them: duplicates of the key dropped (first kept), positions for `ord`. */
function rowsOf(t: InventoryTable, snapshot: InventorySnapshot): { rows: object[]; dropped: number } {
  const records = snapshot[t.member] as readonly object[];
  if (t.ordered) return { rows: records.map((r, ord) => ({ ...r, ord })), dropped: 0 };
  if (!t.key) return { rows: [...records], dropped: 0 };
  const { kept, dropped } = firstByKey(records, keyOfFields(t.key));
  return { rows: kept, dropped };
}

/**
 * Writes one snapshot in one transaction: the host's facts, every inventory table, the host's integrations. The host
 * row is locked first, so two instances handling two snapshots of one host run one after the other, and the newer
 * `collected_at` wins whatever order they arrive in. The lock is FOR NO KEY UPDATE: it excludes other snapshots and
 * heartbeats' host updates like FOR UPDATE, but not the key-share lock a heartbeat's insert of a new host integration
 * takes on the host through the foreign key (which would otherwise deadlock with this transaction's upserts). Per table at most two statements whatever the size of the
 * snapshot, none when the member is what the last snapshot stored (`hosts.inventory_digests`). `receivedAt` (the
 * server's time) stamps the integrations' `last_seen_at`.
 */
export async function storeSnapshot(
  em: EntityManager,
  target: SnapshotTarget,
  snapshot: InventorySnapshot,
  receivedAt: Date,
): Promise<SnapshotOutcome> {
  // Prepared before the transaction: the rows as JSON and their digests (no lock held while computing).
  const members = INVENTORY_TABLES.map((t) => {
    const { rows, dropped } = rowsOf(t, snapshot);
    const json = pgJson(rows);
    return { t, rows: rows.length, dropped, json, digest: digestOf(t, json) };
  });
  const duplicates: Record<string, number> = {};
  for (const m of members) if (m.dropped > 0) duplicates[m.t.member] = m.dropped;
  const integrations = firstByKey(snapshot.integrations, (r) => r.integration_id);
  if (integrations.dropped > 0) duplicates.integrations = integrations.dropped;
  const digests = Object.fromEntries(members.map((m) => [m.t.table, m.digest]));

  return em.transactional(async (tx) => {
    const [host] = await sql<{
      id: string;
      client_id: string;
      stale: boolean;
      inventory_digests: Record<string, string>;
    }>(
      tx,
      `SELECT id, client_id, inventory_digests, (inventory_collected_at IS NOT NULL AND inventory_collected_at >= ?::timestamptz) AS stale
         FROM hosts WHERE id = ? AND agent_id = ? FOR NO KEY UPDATE`,
      [snapshot.collected_at, target.host_id, target.agent_id],
    );
    if (!host) return { kind: 'no_host' } as const;
    if (host.stale) return { kind: 'stale' } as const;

    const f = snapshot.facts;
    await sql(
      tx,
      `UPDATE hosts SET hostname = ?, ip_address = ?, os = ?, os_version = ?, kernel_version = ?, arch = ?, cpu_cores = ?, memory_total_bytes = ?,
              agent_version = ?, labels = ?::jsonb, inventory_collected_at = ?::timestamptz, inventory_digests = ?::jsonb, updated_at = now()
        WHERE id = ?`,
      [
        ...[f.hostname, f.ip_address, f.os, f.os_version, f.kernel_version, f.arch].map(pgText),
        f.cpu_cores,
        f.memory_total_bytes,
        pgText(snapshot.agent_version),
        pgJson(snapshot.labels),
        snapshot.collected_at,
        pgJson(digests),
        host.id,
      ],
    );
    let statements = 2;
    for (const m of members) {
      // Same content as the last snapshot stored: the table already holds exactly these rows.
      if (host.inventory_digests[m.t.table] === m.digest) continue;
      const st = STATEMENTS.get(m.t)!;
      await sql(tx, st.remove.sql, st.remove.params(host.id, m.json));
      statements++;
      if (m.rows > 0) {
        await sql(tx, st.add.sql, st.add.params(host.id, m.json));
        statements++;
      }
    }

    // Integrations are stamped with the server's time, like heartbeats (agents' clocks are not trusted), so reports
    // of both kinds order on one clock.
    await upsertIntegrations(tx, host, integrations.kept, receivedAt);
    await removeIntegrationsNotIn(
      tx,
      host.id,
      integrations.kept.map((r) => r.integration_id),
      receivedAt,
    );
    statements += integrations.kept.length > 0 ? 3 : 1;
    return { kind: 'stored', statements, duplicates } as const;
  });
}
