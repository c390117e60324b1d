import type { Permissions } from '@nats-io/jwt';
import { agentCommandSubject, agentConfigSubject } from '../../contracts/domains/agent-telemetry.ts';
import { streams } from '../../contracts/streams.ts';

/**
 * The NATS users of the system, each with the narrowest permissions that work (docs/operations.md#security-model):
 * - service: gateways and actors (request subjects, namespaced or not, `$SRV` discovery, the JetStream and KV APIs,
 *   and replies anywhere under `_INBOX.`, where every requester's inbox lives: their own, agents' and tools');
 * - agent: one per enrolled agent, in an account of its own (agent-accounts.ts), only its own telemetry, config
 *   fetch, commands and inbox prefix;
 * - tool: read-only observers of events and of `$SRV` discovery, in the tools' account (agent-accounts.ts), with an
 *   inbox prefix of their own;
 * - admin: the operator's maintenance user of the service account (stream deletion and purges);
 * - system: the system account's user that pushes account updates (revocations) to the server.
 */
export type CredentialClass = 'service' | 'agent' | 'tool' | 'admin' | 'system';

/** How long an agent may answer a command sent to it as a request (agents have no general `_INBOX.` publish right). */
const RESPONSES = { max: 1, ttl: 60_000_000_000 /* ns: one minute */ };

/**
 * No response permissions (`resp`) here, on purpose: nats-server then records every message delivered to the
 * connection that carries a reply subject (each request, each JetStream message) and, past 4,096 records, walks
 * them all on every delivery to drop expired ones; a service's replies and acks, allowed by the list below, never
 * retire a record, so that walk ran on every message and multiplied the server's CPU per request-reply (the figures:
 * docs/operations.md → Security model). Agents' and tools' inboxes live under `_INBOX.` instead, which services
 * may publish to and which agents and tools may only read for their own prefix.
 */
export function servicePermissions(): Permissions {
  return {
    pub: {
      // `_R_.>`: the server's reply subjects of requests that came through an import (agents' and tools' accounts).
      allow: [
        'svc.>',
        '*.svc.>',
        '$SRV.>',
        ...SERVICE_JETSTREAM_API,
        '$JS.ACK.>',
        '$JS.FC.>',
        '$KV.>',
        '_INBOX.>',
        '_R_.>',
      ],
      deny: [],
    },
    // A durable's new leader announces itself: its consumers pull again at once (platform/jetstream/pull-loop.ts).
    sub: {
      allow: ['svc.>', '*.svc.>', '$SRV.>', '_INBOX.>', '$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED.>'],
      deny: [],
    },
  };
}

/**
 * The JetStream API calls the services make, and no others: streams are created, updated and read but never deleted,
 * and only the upload stream is purged (by subject, when an upload is dropped) and only the dead-letter stream loses
 * single messages (when one is replayed). Consumers are the services' own to create, read, step down and delete.
 * Deleting or purging anything else takes the admin credentials (`adminPermissions`). `$KV.>` stays whole: the only
 * buckets in the account are the services' leases, named per TTL and namespace, which no subject wildcard can list.
 */
const SERVICE_JETSTREAM_API = [
  '$JS.API.INFO',
  '$JS.API.STREAM.NAMES',
  '$JS.API.STREAM.LIST',
  '$JS.API.STREAM.CREATE.*',
  '$JS.API.STREAM.UPDATE.*',
  '$JS.API.STREAM.INFO.*',
  '$JS.API.STREAM.MSG.GET.*',
  '$JS.API.DIRECT.GET.*',
  '$JS.API.DIRECT.GET.*.>',
  `$JS.API.STREAM.PURGE.${streams.SVC_UPLOADS.name}`,
  `$JS.API.STREAM.MSG.DELETE.${streams.SVC_DLQ.name}`,
  '$JS.API.CONSUMER.>',
];

/**
 * The operator's maintenance user of the service account (`admin.creds`): everything a service may do, plus the
 * JetStream calls that destroy data (deleting and purging streams, stepping leaders down). Used by people and by the
 * tests' clean-up, never by a running service.
 */
export function adminPermissions(): Permissions {
  return {
    pub: { allow: ['>'], deny: [] },
    sub: { allow: ['>'], deny: [] },
  };
}

/**
 * A per-agent inbox prefix under `_INBOX.` (so services can answer it without response permissions): the agent can
 * read its own replies and nobody else's, since its subscribe permission is this prefix alone.
 */
export const agentInboxPrefix = (agentId: string): string => `_INBOX.agent-${agentId}`;

/** Agent subjects (docs/api/fleet.md#telemetry-ingest): telemetry out, config fetch, commands in. */
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

export const toolInboxPrefix = (name: string): string => `_INBOX.tool-${name}`;

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
    pub: {
      allow: ['$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE', '$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP', '$SYS.REQ.CLAIMS.UPDATE'],
      deny: [],
    },
    sub: { allow: ['_INBOX.>'], deny: [] },
  };
}
