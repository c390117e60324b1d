import { z } from 'zod';
import { immutableFields } from '../immutable.ts';
import { subjects } from '../subject.ts';
import { ConfigType, FileChangeEvent, WATCH_DEFAULT_MAX_FILE_SIZE, WatchFilesConfig } from './agent-telemetry.ts';

/**
 * Agent enrolment, watch config and agent status (docs/api/fleet.md: #agents-enrolment-credentials-revocation,
 * #config-fetch-watch-config-and-commands, #agent-status). Enrolment is one-time install tokens, then a
 * challenge-response on the agent's own NATS user nkey that yields broker credentials of the agent class.
 */

const MAX_TOKEN_TTL = 7 * 86_400;

export const CreateInstallTokenBody = z.object({
  expires_in_seconds: z
    .number()
    .int()
    .min(60, 'must be at least 60 seconds')
    .max(MAX_TOKEN_TTL, 'must be at most 7 days (604800 seconds)')
    .default(86_400),
});
export const InstallToken = z.object({ id: z.uuid(), token: z.string(), expires_at: z.iso.datetime() });

/** A NATS user nkey: `U` and 55 more base32 characters. */
export const UserNkey = z.string().regex(/^U[A-Z2-7]{55}$/, 'must be a NATS user public nkey (U…, 56 characters)');

export const EnrollBody = z.object({
  install_token: z.string().min(1).max(200),
  public_key: UserNkey,
  hostname: z.string().trim().min(1, 'must not be empty').max(255),
  os: z.string().max(64).default(''),
  arch: z.string().max(32).default(''),
});
export const EnrollReply = z.object({ agent_id: z.uuid(), challenge: z.string() });

export const EnrollCompleteBody = z.object({
  agent_id: z.uuid(),
  challenge: z.string().min(1).max(200),
  signature: z
    .string()
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, 'must be base64url')
    .max(200),
});
export const EnrollCompleteReply = z.object({
  agent_id: z.uuid(),
  host_id: z.uuid(),
  nats_servers: z.array(z.string()),
  user_jwt: z.string(),
  inbox_prefix: z.string(),
  /** The broker's CA (PEM, SVC_NATS_CA): agents pin it. Absent when the broker's certificate is publicly signed. */
  nats_ca: z.string().optional(),
});

/** Watch config as stored and shown (docs/api/fleet.md#config-fetch-watch-config-and-commands). */
export const WatchConfig = z.object({
  id: z.uuid(),
  host_id: z.uuid(),
  config_type: ConfigType,
  config_data: z.object({
    paths: z.array(z.string()),
    exclude_patterns: z.array(z.string()),
    sensitive_files: z.array(z.string()),
    max_file_size: z.number().int(),
  }),
  version: z.number().int().min(1),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type WatchConfig = z.infer<typeof WatchConfig>;

/** PUT body: `paths` required and non-empty; `max_file_size` defaults to 1 MB. */
export const PutWatchConfigBody = WatchFilesConfig.extend({
  paths: z.array(z.string().min(1, 'must not be empty').max(4096)).min(1, 'must not be empty').max(1_000),
  max_file_size: z
    .number()
    .int()
    .min(1)
    .max(1024 * 1024 * 1024)
    .default(WATCH_DEFAULT_MAX_FILE_SIZE),
});

const HostId = z.object({ host_id: z.uuid() });

/** The host and the config type are fixed (the path names the host): echoed they are fine, another host is 400. */
export const WATCH_CONFIG_IMMUTABLE = ['host_id', 'config_type'] as const;
const WatchFixed = z.object(immutableFields(WatchConfig, WATCH_CONFIG_IMMUTABLE));
const S = PutWatchConfigBody.shape;

/**
 * What the HTTP PUT takes: the spec's flat fields, or the config as GET shows it (`config_data`, with the record's other
 * fields), so GET → edit → PUT works. The flat fields carry no defaults here, so a body mixing both forms is told apart.
 */
export const PutWatchConfigHttpBody = z
  .object({
    paths: S.paths.optional(),
    exclude_patterns: S.exclude_patterns.unwrap().optional(),
    sensitive_files: S.sensitive_files.unwrap().optional(),
    max_file_size: S.max_file_size.unwrap().optional(),
    config_data: PutWatchConfigBody.optional(),
    ...WatchFixed.shape,
  })
  .superRefine((b, ctx) => {
    const flat =
      b.paths !== undefined ||
      b.exclude_patterns !== undefined ||
      b.sensitive_files !== undefined ||
      b.max_file_size !== undefined;
    if (b.config_data !== undefined && flat)
      ctx.addIssue({
        code: 'custom',
        path: ['config_data'],
        message: 'give the config either as its fields or as config_data (as GET shows it), not both',
      });
    else if (b.config_data === undefined && b.paths === undefined)
      ctx.addIssue({ code: 'custom', path: ['paths'], message: 'is required (or send config_data as GET shows it)' });
  });

export const fleetAgentSubjects = subjects({
  'svc.fleet.install_tokens.create': {
    summary:
      'Issues a one-time install token for an environment (agents:update on its client); shown once, stored hashed.',
    request: CreateInstallTokenBody.extend({ environment_id: z.uuid() }),
    reply: InstallToken,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.enrol.start': {
    summary: 'First step of enrolment (public): an install token and the agent nkey give an agent id and a challenge.',
    request: EnrollBody,
    reply: EnrollReply,
    errors: ['unauthorized', 'bad_request'],
  },
  'svc.fleet.enrol.complete': {
    summary:
      'Second step (public): the nkey signature of the challenge creates the host and issues agent-class broker credentials.',
    request: EnrollCompleteBody,
    reply: EnrollCompleteReply,
    errors: ['unauthorized', 'bad_request'],
  },
  'svc.fleet.watch_config.get': {
    retry: 'safe',
    summary: "A host's watch_files config (hosts:read); 404 when none was set.",
    request: HostId,
    reply: WatchConfig,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.watch_config.put': {
    summary:
      'Stores the watch_files config (hosts:write), version +1, and sends a config_update command to the host agent; `sent` holds the fixed fields as the body gave them.',
    request: PutWatchConfigBody.extend({ ...HostId.shape, sent: WatchFixed.default({}) }),
    reply: WatchConfig,
    errors: ['forbidden', 'not_found'],
  },
});

// ---------------------------------------------------------------------------------------------------------------
// Events

/** An agent went online (heartbeat) or offline (no heartbeat for SVC_AGENT_STALE_TIMEOUT_SECONDS). */
export const AgentStatusChanged = z.object({
  host_id: z.uuid(),
  agent_id: z.uuid(),
  environment_id: z.uuid(),
  client_id: z.uuid(),
  hostname: z.string(),
  status: z.enum(['online', 'offline']),
  previous: z.enum(['online', 'offline']),
  at: z.iso.datetime(),
});
export type AgentStatusChanged = z.infer<typeof AgentStatusChanged>;

/** A change under a watched path, as the agent reported it, with the host and tenant the fleet resolved. */
export const FileChanged = FileChangeEvent.extend({
  host_id: z.uuid(),
  agent_id: z.uuid(),
  environment_id: z.uuid(),
  client_id: z.uuid(),
  hostname: z.string(),
});
export type FileChanged = z.infer<typeof FileChanged>;
