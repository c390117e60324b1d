import type { Permissions } from '@nats-io/jwt';
import { agentCommandSubject, agentConfigSubject } from '../../../contracts/domains/agent-telemetry.ts';

/**
 * The NATS users of the system, each with the narrowest permissions that work (ARCHITECTURE.md → Trust):
 * - service: gateways and actors (request subjects, namespaced or not, `$SRV` discovery, the JetStream and KV APIs,
 *   their own `_INBOX.` replies), and replies to whoever asked them (agents, tools) through response permissions;
 * - agent: one per enrolled agent, only its own telemetry, config fetch, commands and inbox prefix;
 * - tool: read-only observers of events and of `$SRV` discovery, with an inbox prefix of their own;
 * - system: the system account's user that pushes account updates (revocations) to the server.
 */
export type CredentialClass = 'service' | 'agent' | 'tool' | 'system';

/** How long a responder may answer a request it received (agents' config fetch, tools' discovery pings). */
const RESPONSES = { max: 1, ttl: 60_000_000_000 /* ns: one minute */ };

export function servicePermissions(): Permissions {
  return {
    pub: { allow: ['svc.>', '*.svc.>', '$SRV.>', '$JS.API.>', '$JS.ACK.>', '$JS.FC.>', '$KV.>', '_INBOX.>'], deny: [] },
    sub: { allow: ['svc.>', '*.svc.>', '$SRV.>', '_INBOX.>'], deny: [] },
    resp: RESPONSES,
  };
}

/** A per-agent inbox prefix: the agent can read its own replies and nobody else's (`_INBOX.>` stays closed to it). */
export const agentInboxPrefix = (agentId: string): string => `_INBOX_${agentId}`;

/** Agent subjects fixed by console-operations.md: telemetry out, config fetch, commands in. */
export const agentSubjects = (agentId: string) => ({
  telemetry: `svc.agent.${agentId}.>`,
  configFetch: agentConfigSubject(agentId),
  commands: agentCommandSubject(agentId),
});

/** NATS subject tokens an agent id may use: it is embedded in subjects and permissions, so no wildcards or dots. */
export const AGENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function agentPermissions(agentId: string): Permissions {
  if (!AGENT_ID.test(agentId)) throw new Error('agent id must be 1-64 letters, digits, _ or -');
  const s = agentSubjects(agentId);
  return {
    pub: { allow: [s.telemetry, s.configFetch], deny: [] },
    sub: { allow: [s.commands, `${agentInboxPrefix(agentId)}.>`], deny: [] },
    // Commands may be requests: the agent answers on the reply subject it was given, and nowhere else.
    resp: RESPONSES,
  };
}

export const toolInboxPrefix = (name: string): string => `_INBOX_tool_${name}`;

/** Tool names end up in subjects: the same token rules as agent ids. */
export const TOOL_NAME = AGENT_ID;

export function toolPermissions(name: string): Permissions {
  if (!TOOL_NAME.test(name)) throw new Error('tool name must be 1-64 letters, digits, _ or -');
  return {
    // Discovery only: `$SRV.PING|INFO|STATS[.name[.id]]` are answered by every service with what it is, nothing else.
    pub: { allow: ['$SRV.PING', '$SRV.PING.>', '$SRV.INFO', '$SRV.INFO.>', '$SRV.STATS', '$SRV.STATS.>'], deny: [] },
    sub: { allow: ['svc.evt.>', `${toolInboxPrefix(name)}.>`], deny: [] },
  };
}

export function systemPermissions(): Permissions {
  return {
    pub: { allow: ['$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE', '$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP', '$SYS.REQ.CLAIMS.UPDATE'], deny: [] },
    sub: { allow: ['_INBOX.>'], deny: [] },
  };
}
