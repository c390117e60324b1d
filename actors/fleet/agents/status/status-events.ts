import type { AgentStatusChanged } from '../../../../contracts/domains/fleet-agents.ts';

/** The host columns an `agent_status` event is built from, read under the host's row lock. */
export interface StatusRow {
  id: string;
  agent_id: string | null;
  environment_id: string;
  client_id: string;
  hostname: string;
  agent_status: 'online' | 'offline';
  last_seen_at?: Date | string | null;
}

export function statusEvent(
  row: StatusRow,
  agentId: string,
  status: 'online' | 'offline',
  at: Date,
): AgentStatusChanged {
  return {
    host_id: row.id,
    agent_id: agentId,
    environment_id: row.environment_id,
    client_id: row.client_id,
    hostname: row.hostname,
    status,
    previous: row.agent_status,
    at: at.toISOString(),
  };
}

/**
 * The dedupe id of a host's going online: the same for every delivery of the heartbeats that bring it online from one
 * offline spell (the row's last_seen_at does not move until one commits), so a batch rolled back and redelivered in
 * other company publishes the event once.
 */
export const onlineMsgId = (row: StatusRow, agentId: string): string =>
  `agent-status:${row.id}:online:${agentId}:${row.last_seen_at ? new Date(row.last_seen_at).getTime() : 'never'}`;

/** Publishes every event, and fails with the first failure only once none is still in flight. */
export async function publishAll(publishes: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(publishes)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}
