import type { EntityManager } from '@mikro-orm/postgresql';
import type { Heartbeat } from '../../../../contracts/domains/agent-telemetry.ts';
import type { AgentRef } from '../../telemetry/consume.ts';
import type { StatusDeps } from './deps.ts';

export interface HeartbeatItem {
  agent: AgentRef;
  hb: Heartbeat;
  at: Date;
}

export const FACTS = [
  'hostname',
  'ip_address',
  'os',
  'os_version',
  'kernel_version',
  'arch',
  'cpu_cores',
  'memory_total_bytes',
] as const;

/** A heartbeat as a row of jsonb_to_recordset(…) AS v(HEARTBEAT_COLUMNS); facts it did not send are null. */
export const heartbeatRow = ({ agent, hb, at }: HeartbeatItem): Record<string, unknown> => ({
  host_id: agent.host_id,
  agent_id: agent.agent_id,
  at: at.toISOString(),
  agent_version: hb.agent_version,
  ...(hb.facts ? Object.fromEntries(FACTS.map((f) => [f, hb.facts![f]])) : {}),
});
export const HEARTBEAT_COLUMNS = `host_id uuid, agent_id uuid, at timestamptz, agent_version text, hostname text, ip_address text, os text,
  os_version text, kernel_version text, arch text, cpu_cores integer, memory_total_bytes bigint`;

/** Facts a heartbeat did not send keep their stored values. */
export const KEEP_FACTS = FACTS.map((f) => `${f} = coalesce(v.${f}, h.${f})`).join(', ');

/**
 * A host twice in one batch (an agent flushing its outbox): its latest heartbeat counts, with the facts of the latest
 * one that sent them. (Integration statuses are stored from every heartbeat: each report is of its own integrations.)
 */
export function latestPerHost<T extends HeartbeatItem>(items: readonly T[]): Map<string, T> {
  const latest = new Map<string, T>();
  for (const i of items) {
    const seen = latest.get(i.agent.host_id);
    if (!seen) latest.set(i.agent.host_id, i);
    else if (seen.at <= i.at)
      latest.set(i.agent.host_id, !i.hb.facts && seen.hb.facts ? { ...i, hb: { ...i.hb, facts: seen.hb.facts } } : i);
  }
  return latest;
}

/** The integration statuses of every heartbeat whose host was stored (each report is of its own integrations). */
export async function storeIntegrations(
  deps: Pick<StatusDeps, 'integrations'>,
  em: EntityManager,
  items: HeartbeatItem[],
  stored: Set<string>,
): Promise<void> {
  const reports = items.filter((i) => stored.has(i.agent.host_id) && i.hb.integrations?.length);
  if (reports.length === 0 || !deps.integrations) return;
  await deps.integrations(
    em,
    reports.map((i) => ({
      host: { id: i.agent.host_id, client_id: i.agent.client_id },
      reports: i.hb.integrations!,
      at: i.at,
    })),
  );
}
