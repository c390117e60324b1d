import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { Paged, Paging } from '../paging.ts';
import { subjects } from '../subject.ts';

/** Clients (docs/api/identity.md#clients-fleet): the tenants every grant, environment and host hangs on. */

/** Lower-case letters, digits and hyphens; 1 to 63 characters; starts and ends with a letter or digit. */
export const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
export const Slug = z
  .string()
  .regex(SLUG, 'must be 1-63 lower-case letters, digits or hyphens, starting and ending with a letter or digit');

export const Client = z.object({
  id: z.uuid(),
  name: z.string(),
  slug: z.string(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type Client = z.infer<typeof Client>;

const ClientName = z.string().trim().min(1, 'must not be empty').max(200);

export const ClientListQuery = z.object({
  page: z.coerce.number().int().min(1).default(1),
  per_page: z.coerce.number().int().min(1).max(100).default(20),
  sort: z.enum(['name', 'slug', 'created_at', 'updated_at']).default('name'),
  order: z.enum(['asc', 'desc']).default('asc'),
});

export const CreateClientBody = z.object({ name: ClientName, slug: Slug });
/** The slug is fixed at creation: echoing it is fine, another is 400 (contracts/immutable.ts). */
export const CLIENT_IMMUTABLE = ['slug'] as const;
export const UpdateClientBody = z.object({ name: ClientName }).extend(immutableFields(Client, CLIENT_IMMUTABLE));

const ById = z.object({ id: z.uuid() });
const Timestamp = z.iso.datetime();
const NoContent = z.object({});

// ---------------------------------------------------------------------------------------------------------------
// Environments: the spec names only the list; the rest (fields, single-environment routes) is ours.

export const Environment = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  name: z.string(),
  slug: z.string(),
  /** Hosts in the environment now. */
  host_count: z.number().int().nonnegative(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Environment = z.infer<typeof Environment>;

const EnvironmentName = z.string().trim().min(1, 'must not be empty').max(200);
export const EnvironmentListQuery = z.object(Paging);
export const CreateEnvironmentBody = z.object({ name: EnvironmentName, slug: Slug });
/** The client and slug are fixed at creation: echoing them is fine, others are 400 (contracts/immutable.ts). */
export const ENVIRONMENT_IMMUTABLE = ['client_id', 'slug'] as const;
export const UpdateEnvironmentBody = z
  .object({ name: EnvironmentName })
  .extend(immutableFields(Environment, ENVIRONMENT_IMMUTABLE));

// ---------------------------------------------------------------------------------------------------------------
// Hosts

export const AgentStatus = z.enum(['online', 'offline']);

/** User tags: keys of ASCII letters, digits, `_ - . /` (1 to 128), string values up to 1024 characters, at most 100. */
export const TAG_KEY = /^[A-Za-z0-9_./-]{1,128}$/;
export const MAX_TAGS = 100;
export const MAX_TAG_VALUE = 1024;
const clip = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
export const Tags = z
  .record(
    z.string(),
    z
      .string({ error: 'tag values must be strings' })
      .max(MAX_TAG_VALUE, `tag values are at most ${MAX_TAG_VALUE} characters`),
  )
  .superRefine((tags, ctx) => {
    const keys = Object.keys(tags);
    if (keys.length > MAX_TAGS)
      ctx.addIssue({ code: 'custom', message: `at most ${MAX_TAGS} tags (got ${keys.length})` });
    const bad = keys.find((k) => !TAG_KEY.test(k));
    if (bad !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: `tag key ${JSON.stringify(clip(bad))} must be 1-128 characters of letters, digits, _ - . or /`,
      });
  });

export const Host = z.object({
  id: z.uuid(),
  environment_id: z.uuid(),
  client_id: z.uuid(),
  agent_id: z.uuid().nullable(),
  hostname: z.string(),
  ip_address: z.string(),
  os: z.string(),
  os_version: z.string(),
  kernel_version: z.string(),
  arch: z.string(),
  cpu_cores: z.number().int().nonnegative(),
  memory_total_bytes: z.number().int().nonnegative(),
  agent_status: AgentStatus,
  agent_version: z.string(),
  last_seen_at: Timestamp.nullable(),
  /** User tags (PUT /hosts/:id/tags). */
  tags: z.record(z.string(), z.string()),
  /** Labels the agent reports. */
  labels: z.record(z.string(), z.string()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type Host = z.infer<typeof Host>;

export const HOST_SORTS = ['hostname', 'last_seen_at', 'created_at', 'agent_status', 'ip_address'] as const;
export const HostListQuery = z.object({
  ...Paging,
  status: AgentStatus.optional(),
  sort: z.enum(HOST_SORTS).default('hostname'),
  order: z.enum(['asc', 'desc']).default('asc'),
});
export const PutTagsBody = z.object({ tags: Tags });

// ---------------------------------------------------------------------------------------------------------------
// Agents (administration; enrolment lives in fleet-agents.ts)

export const Agent = z.object({
  id: z.uuid(),
  client_id: z.uuid(),
  environment_id: z.uuid(),
  host_id: z.uuid().nullable(),
  hostname: z.string(),
  os: z.string(),
  arch: z.string(),
  agent_version: z.string(),
  status: z.enum(['active', 'revoked']),
  public_key: z.string(),
  enrolled_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
  credentials_expires_at: Timestamp.nullable(),
  created_at: Timestamp,
});
export type Agent = z.infer<typeof Agent>;

export const AgentListQuery = z.object({
  ...Paging,
  client_id: z.uuid().optional(),
  environment_id: z.uuid().optional(),
  status: z.enum(['active', 'revoked']).optional(),
});

export const fleetSubjects = subjects({
  'svc.fleet.clients.list': {
    retry: 'safe',
    summary: 'Clients the caller may read (clients:read), paginated and sorted.',
    request: ClientListQuery,
    reply: Paged(Client),
    errors: ['forbidden'],
  },
  'svc.fleet.clients.get': {
    retry: 'safe',
    summary: 'One client (clients:read on it; 404 when out of scope).',
    request: ById,
    reply: Client,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.clients.create': {
    summary: 'Creates a client (clients:write).',
    request: CreateClientBody,
    reply: Client,
    errors: ['forbidden', 'conflict'],
  },
  'svc.fleet.clients.update': {
    summary:
      'Renames a client; the slug never changes: sent unchanged it is accepted, another is 400 (clients:write on it).',
    request: ById.extend(UpdateClientBody.shape),
    reply: Client,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.fleet.clients.delete': {
    summary:
      "Deletes a client with its grants and environments; affected users lose that access at once and its agents' broker credentials are revoked (clients:delete on it).",
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'unavailable'],
  },

  'svc.fleet.environments.list': {
    retry: 'safe',
    summary: "A client's environments by name (environments:read on the client).",
    request: EnvironmentListQuery.extend({ client_id: z.uuid() }),
    reply: Paged(Environment),
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.environments.get': {
    retry: 'safe',
    summary: 'One environment (environments:read).',
    request: ById,
    reply: Environment,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.environments.create': {
    summary: 'Creates an environment in a client; the slug is unique within the client (environments:write).',
    request: CreateEnvironmentBody.extend({ client_id: z.uuid() }),
    reply: Environment,
    errors: ['forbidden', 'not_found', 'conflict'],
  },
  'svc.fleet.environments.update': {
    summary:
      'Renames an environment; its client and slug never change: sent unchanged they are accepted, others are 400 (environments:write).',
    request: ById.extend(UpdateEnvironmentBody.shape),
    reply: Environment,
    errors: ['forbidden', 'not_found', 'bad_request'],
  },
  'svc.fleet.environments.delete': {
    summary:
      'Deletes an environment without hosts, with its install tokens and pending enrolments (environments:delete); 409 while it has hosts.',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'conflict', 'unavailable'],
  },

  'svc.fleet.hosts.list': {
    retry: 'safe',
    summary: "An environment's hosts, filtered by agent status, sorted and paginated (hosts:read).",
    request: HostListQuery.extend({ environment_id: z.uuid() }),
    reply: Paged(Host),
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.hosts.get': {
    retry: 'safe',
    summary: 'One host (hosts:read).',
    request: ById,
    reply: Host,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.hosts.tags.replace': {
    summary: "Replaces a host's user tags (tags:write).",
    request: ById.extend(PutTagsBody.shape),
    reply: Host,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.hosts.delete': {
    summary: 'Deletes a host with its inventory and revokes its agent at the broker (hosts:delete).',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'unavailable'],
  },

  'svc.fleet.agents.list': {
    retry: 'safe',
    summary: 'Enrolled agents (active or revoked; never pending) on the clients the caller holds agents:read on.',
    request: AgentListQuery,
    reply: Paged(Agent),
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.agents.revoke': {
    summary:
      'Revokes an agent: its broker credentials at once, its host goes offline (agents:update); repeating it is a no-op.',
    request: ById,
    reply: NoContent,
    errors: ['forbidden', 'not_found', 'unavailable'],
  },
});
