import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { AlertFacts, AlertGroupChanged, DeliveryJob } from '../../../contracts/domains/events-records.ts';
import { iso, isoOrNull, sql } from '../../../platform/stores/sql.ts';
import { pgJson } from '../../../platform/stores/pg-values.ts';

export interface AlertGroupRow {
  id: string;
  receiver_id: string | null;
  client_id: string;
  environment_id: string | null;
  host_id: string | null;
  group_key: string;
  name: string;
  severity: string;
  status: 'firing' | 'resolved';
  fired_at: string;
  resolved_at: string | null;
  acknowledged_at: string | null;
}
export const GROUP_COLUMNS =
  'id, receiver_id, client_id, environment_id, host_id, group_key, name, severity, status, fired_at, resolved_at, acknowledged_at';

/** Where a group sits: the host found for it, else the source's environment, else client-wide. */
export interface Placement {
  environment_id: string | null;
  host_id: string | null;
}

export interface GroupChange {
  group: AlertGroupRow;
  change: 'fired' | 'resolved' | null;
}

const ms = (t: string | null): number => (t === null ? Number.NaN : Date.parse(iso(t)));

/**
 * Applies one Alertmanager notification to its alert group, under a transaction-scoped advisory lock on
 * (source, group key) so notifications of one group are applied one at a time:
 * - no group yet: one is created (firing, or already resolved);
 * - the latest group firing: a firing repeat updates it (alerts, name, severity, earliest fired time, host when still
 *   unknown); a resolved notification resolves it;
 * - the latest group resolved: a notification of alerts that started after it ended opens a new group (a new
 *   incident, firing or already resolved); an older one (a repeat, or out of order) changes nothing.
 */
export async function applyNotification(
  tx: EntityManager,
  job: DeliveryJob,
  a: AlertFacts,
  place: Placement,
): Promise<GroupChange> {
  await sql(tx, `SELECT pg_advisory_xact_lock(hashtext('events.alert_group'), hashtext(?))`, [
    `${job.receiver_id}:${a.group_key}`,
  ]);
  const [latest] = await sql<AlertGroupRow>(
    tx,
    `SELECT ${GROUP_COLUMNS} FROM alert_groups WHERE receiver_id = ? AND group_key = ? ORDER BY fired_at DESC, created_at DESC LIMIT 1 FOR UPDATE`,
    [job.receiver_id, a.group_key],
  );
  const alerts = pgJson(a.alerts);
  const insert = async (): Promise<AlertGroupRow> => {
    const [row] = await sql<AlertGroupRow>(
      tx,
      `INSERT INTO alert_groups (id, receiver_id, client_id, environment_id, host_id, group_key, name, severity, status, fired_at, resolved_at, alerts, external_url, last_notified_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?) RETURNING ${GROUP_COLUMNS}`,
      [
        randomUUID(),
        job.receiver_id,
        job.client_id,
        place.environment_id,
        place.host_id,
        a.group_key,
        a.name,
        a.severity,
        a.status,
        a.fired_at,
        a.resolved_at,
        alerts,
        a.external_url,
        job.received_at,
      ],
    );
    return row!;
  };

  if (!latest) return { group: await insert(), change: a.status === 'firing' ? 'fired' : 'resolved' };

  if (latest.status === 'resolved') {
    // A notification of alerts that started after the group ended is a new incident, even when its resolution
    // arrives before its firing (deliveries are stored concurrently); anything older is a repeat or out of order.
    const ended = ms(latest.resolved_at ?? latest.fired_at);
    if (Date.parse(a.fired_at) > ended)
      return { group: await insert(), change: a.status === 'firing' ? 'fired' : 'resolved' };
    return { group: latest, change: null };
  }

  const [row] = await sql<AlertGroupRow>(
    tx,
    `UPDATE alert_groups SET name = ?, severity = ?, status = ?, fired_at = least(fired_at, ?), resolved_at = ?,
            host_id = coalesce(host_id, ?), environment_id = CASE WHEN host_id IS NULL AND ?::uuid IS NOT NULL THEN ? ELSE environment_id END,
            alerts = ?::jsonb, external_url = ?, last_notified_at = ?, updated_at = now()
      WHERE id = ? RETURNING ${GROUP_COLUMNS}`,
    [
      a.name,
      a.severity,
      a.status,
      a.fired_at,
      a.status === 'resolved' ? a.resolved_at : null,
      place.host_id,
      place.host_id,
      place.environment_id,
      alerts,
      a.external_url,
      job.received_at,
      latest.id,
    ],
  );
  return { group: row!, change: a.status === 'resolved' ? 'resolved' : null };
}

/** The event announcing a change of a group (the timeline's alert rows). */
export function changedEvent(
  g: AlertGroupRow,
  change: AlertGroupChanged['change'],
  at: string,
  by: string | null = null,
  labels?: Record<string, string>[],
): AlertGroupChanged {
  return {
    id: g.id,
    client_id: g.client_id,
    environment_id: g.environment_id,
    host_id: g.host_id,
    name: g.name,
    severity: g.severity,
    change,
    fired_at: iso(g.fired_at),
    resolved_at: isoOrNull(g.resolved_at),
    at,
    by,
    ...(labels ? { labels } : {}),
  };
}
