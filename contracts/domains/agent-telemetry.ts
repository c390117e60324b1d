import { z } from 'zod';

/**
 * What agents send and receive over NATS (docs/api/fleet.md#telemetry-ingest, #config-fetch-watch-config-and-commands):
 * - telemetry, published on `svc.agent.{agentID}.<kind>` (captured by the SVC_TELEMETRY stream) with the kinds below;
 * - config fetch, request-reply on `svc.system.agent.config.{agentID}`;
 * - commands, on `svc.system.commands.{agentID}`.
 * An agent's identity is always the subject token (the broker only lets an agent publish on its own subjects), never a
 * body field. Every payload is parsed with these schemas by the ingesting consumer: a failure is dead-lettered.
 *
 * Limits keep one agent from flooding the stores: arrays are capped, strings are bounded.
 */

export const TELEMETRY_KINDS = ['heartbeat', 'inventory', 'metrics', 'events'] as const;
export type TelemetryKind = (typeof TELEMETRY_KINDS)[number];

const Str = (max = 255) => z.string().max(max);
const Text = (max = 4096) => z.string().max(max);
const Int = z.number().int();
const NonNeg = z.number().int().nonnegative();
const Num = z.number().finite();
const Time = z.iso.datetime({ offset: true });
/** Agent labels and integration/container labels: short string keys and values. */
export const LabelMap = z
  .record(z.string().min(1).max(128), z.string().max(1024))
  .refine((m) => Object.keys(m).length <= 200, 'at most 200 labels');

/** Host facts an agent reports with every snapshot (and, when they change, with a heartbeat). */
export const HostFacts = z.object({
  hostname: Str().min(1),
  ip_address: Str(64).default(''),
  os: Str(64).default(''),
  os_version: Str(128).default(''),
  kernel_version: Str(128).default(''),
  arch: Str(32).default(''),
  // The column is a PostgreSQL integer: a larger count is refused here rather than failing the batch it is in.
  cpu_cores: NonNeg.max(2_147_483_647).default(0),
  memory_total_bytes: NonNeg.default(0),
});
export type HostFacts = z.infer<typeof HostFacts>;

/** One integration on a host: a collector's status and, every 5 minutes, the service's configuration. */
export const IntegrationConfigValue = z.object({
  value: z.union([z.string().max(4096), Num, z.boolean()]),
  unit: Str(32).optional(),
  source: Str(255),
  category: Str(64),
});
export const IntegrationReport = z.object({
  integration_id: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, _ or -'),
  collector_name: Str(128),
  status: z.enum(['ok', 'warning', 'error', 'unknown']),
  status_message: Text(1024).default(''),
  enabled: z.boolean().default(true),
  /** Absent: keep the config stored from an earlier report (config travels only every 5 minutes). */
  config: z.record(z.string().min(1).max(128), IntegrationConfigValue).optional(),
});
export type IntegrationReport = z.infer<typeof IntegrationReport>;

export const Heartbeat = z.object({
  sent_at: Time,
  agent_version: Str(64),
  uptime_seconds: NonNeg.default(0),
  facts: HostFacts.optional(),
  integrations: z.array(IntegrationReport).max(100).optional(),
});
export type Heartbeat = z.infer<typeof Heartbeat>;

// ---------------------------------------------------------------------------------------------------------------
// Inventory snapshot: everything the host has, replacing the previous snapshot atomically.

export const ProcessRecord = z.object({
  pid: NonNeg,
  name: Str(),
  command: Text(),
  username: Str(),
  state: Str(32),
  ppid: NonNeg,
  threads: NonNeg,
  cpu_percent: Num,
  memory_percent: Num,
  memory_rss_bytes: NonNeg,
  memory_vms_bytes: NonNeg,
  started_at: Time.nullable(),
});
export const ServiceRecord = z.object({
  name: Str(),
  description: Text(1024).default(''),
  /** systemd: load/active/sub states; `enabled` from the unit file state. */
  load_state: Str(32).default(''),
  active_state: Str(32),
  sub_state: Str(32).default(''),
  enabled: z.boolean().nullable().default(null),
  main_pid: NonNeg.nullable().default(null),
  manager: Str(32).default('systemd'),
});
export const PackageRecord = z.object({
  name: Str(),
  version: Str(),
  architecture: Str(32).default(''),
  manager: Str(32),
  description: Text(1024).default(''),
  installed_size_bytes: NonNeg.nullable().default(null),
});
export const PortRecord = z.object({
  protocol: z.enum(['tcp', 'tcp6', 'udp', 'udp6']),
  local_address: Str(64),
  local_port: z.number().int().min(0).max(65535),
  remote_address: Str(64).default(''),
  remote_port: z.number().int().min(0).max(65535).default(0),
  state: Str(32),
  pid: NonNeg.nullable().default(null),
  process_name: Str().default(''),
});
export const InterfaceRecord = z.object({
  name: Str(64),
  mac_address: Str(64).default(''),
  ipv4_addresses: z.array(Str(64)).max(64).default([]),
  ipv6_addresses: z.array(Str(64)).max(64).default([]),
  mtu: NonNeg.nullable().default(null),
  state: Str(32).default(''),
  speed_mbps: Int.nullable().default(null),
  rx_bytes: NonNeg.default(0),
  tx_bytes: NonNeg.default(0),
});
export const SystemUserRecord = z.object({
  username: Str(),
  uid: NonNeg,
  gid: NonNeg,
  home: Str(1024).default(''),
  shell: Str(1024).default(''),
  gecos: Str(1024).default(''),
  is_system: z.boolean(),
  groups: z.array(Str()).max(256).default([]),
});
export const CronJobRecord = z.object({
  username: Str(),
  schedule: Str(),
  command: Text(),
  /** Where it was found: `crontab:<user>`, `/etc/crontab`, `/etc/cron.d/<file>`, `systemd-timer:<unit>`. */
  source: Str(1024),
  is_active: z.boolean(),
});
export const GpuDeviceRecord = z.object({
  device_index: NonNeg,
  name: Str(),
  vendor: Str(),
  driver_version: Str(128).default(''),
  memory_total_bytes: NonNeg.nullable().default(null),
  pci_bus_id: Str(64).default(''),
  architecture: Str(128).default(''),
});
export const FirewallRuleRecord = z.object({
  chain: Str(128),
  rule_number: NonNeg,
  target: Str(128),
  protocol: Str(32).default(''),
  port: Str(64).default(''),
  tool: Str(32),
  table_name: Str(64).default(''),
  rule_text: Text(),
});
export const CertificateRecord = z.object({
  subject: Text(1024),
  issuer: Text(1024),
  not_before: Time,
  not_after: Time,
  fingerprint_sha256: z.string().regex(/^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/, 'colon-separated upper-case hex'),
  is_ca: z.boolean(),
  key_algorithm: Str(64),
  key_bits: NonNeg.nullable().default(null),
  path: Str(1024).default(''),
});
export const KernelModuleRecord = z.object({
  name: Str(128),
  size_bytes: NonNeg,
  instances: NonNeg,
  used_by: z.array(Str(128)).max(256).default([]),
});
export const SecurityItemRecord = z.object({
  /** e.g. `sshd`, `kernel`, `selinux`, `apparmor`, `updates`, `accounts`. */
  category: Str(64),
  key: Str(255),
  value: Text(4096),
});
export const ContainerRecord = z.object({
  container_id: Str(128),
  name: Str(),
  image: Text(1024),
  state: Str(32),
  status: Str(255).default(''),
  runtime: Str(32),
  created_at: Time.nullable().default(null),
  labels: LabelMap.default({}),
});

export const InventorySnapshot = z.object({
  collected_at: Time,
  agent_version: Str(64),
  facts: HostFacts,
  labels: LabelMap.default({}),
  processes: z.array(ProcessRecord).max(10_000).default([]),
  services: z.array(ServiceRecord).max(5_000).default([]),
  packages: z.array(PackageRecord).max(20_000).default([]),
  ports: z.array(PortRecord).max(10_000).default([]),
  interfaces: z.array(InterfaceRecord).max(1_000).default([]),
  users: z.array(SystemUserRecord).max(10_000).default([]),
  cron_jobs: z.array(CronJobRecord).max(5_000).default([]),
  gpu_devices: z.array(GpuDeviceRecord).max(64).default([]),
  firewall_rules: z.array(FirewallRuleRecord).max(10_000).default([]),
  certificates: z.array(CertificateRecord).max(5_000).default([]),
  kernel_modules: z.array(KernelModuleRecord).max(5_000).default([]),
  security_items: z.array(SecurityItemRecord).max(5_000).default([]),
  containers: z.array(ContainerRecord).max(5_000).default([]),
  integrations: z.array(IntegrationReport).max(100).default([]),
});
export type InventorySnapshot = z.infer<typeof InventorySnapshot>;
export type InventorySnapshotIn = z.input<typeof InventorySnapshot>;

// ---------------------------------------------------------------------------------------------------------------
// Metric batches: samples for the time-series store (labels host_id, environment_id, client_id added at ingest).

/** Prometheus metric and label name rules: what the time-series store accepts. */
export const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Labels the ingest sets itself: a sample carrying one is refused rather than allowed to claim another tenant. */
export const RESERVED_LABELS = ['host_id', 'environment_id', 'client_id', 'agent_id', '__name__'] as const;

/** Size limits of a metric batch, shared by the schema and the ingest's fast check below. */
export const SAMPLE_NAME_MAX = 200;
export const LABEL_NAME_MAX = 100;
export const LABEL_VALUE_MAX = 1024;
export const LABELS_PER_SAMPLE = 20;
export const SAMPLES_PER_BATCH = 20_000;

export const MetricSample = z.object({
  name: z.string().max(SAMPLE_NAME_MAX).regex(METRIC_NAME, 'metric names are [a-zA-Z_:][a-zA-Z0-9_:]*'),
  value: Num,
  /** Milliseconds since the epoch; absent = the batch's `collected_at`. */
  time_ms: NonNeg.optional(),
  labels: z
    .record(
      z.string().max(LABEL_NAME_MAX).regex(LABEL_NAME, 'label names are [a-zA-Z_][a-zA-Z0-9_]*'),
      z.string().max(LABEL_VALUE_MAX),
    )
    .refine((m) => Object.keys(m).length <= LABELS_PER_SAMPLE, `at most ${LABELS_PER_SAMPLE} labels per sample`)
    .refine(
      (m) => !RESERVED_LABELS.some((r) => Object.hasOwn(m, r)),
      `labels ${RESERVED_LABELS.join(', ')} are set by the server`,
    )
    .default({}),
});
export type MetricSample = z.infer<typeof MetricSample>;

export const MetricBatch = z.object({
  collected_at: Time,
  samples: z.array(MetricSample).min(1).max(SAMPLES_PER_BATCH),
});
export type MetricBatch = z.infer<typeof MetricBatch>;
export type MetricBatchIn = z.input<typeof MetricBatch>;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const SAMPLE_KEYS = new Set(['name', 'value', 'time_ms', 'labels']);
const RESERVED = new Set<string>(RESERVED_LABELS);

/**
 * True when `v` (fresh from JSON.parse) is a batch MetricBatch accepts AND whose parse would change nothing but a
 * missing `labels` (set to `{}` here, in place). Deliberately narrower than the schema: unknown keys (which the
 * schema strips), a `__proto__` label (which it drops) or anything else unusual answer false, and the caller lets
 * the schema decide. It must never answer true where the schema would refuse: test/fleet/metrics-fast-check.unit.test.ts
 * compares the two.
 */
function fastMetricBatch(v: unknown): v is MetricBatch {
  if (!isPlainObject(v)) return false;
  let keys = 0;
  for (const k in v) {
    if (k !== 'collected_at' && k !== 'samples') return false;
    keys++;
  }
  if (keys !== 2) return false;
  const samples = v.samples;
  if (!Array.isArray(samples) || samples.length < 1 || samples.length > SAMPLES_PER_BATCH) return false;
  if (typeof v.collected_at !== 'string' || !Time.safeParse(v.collected_at).success) return false;
  for (const s of samples as unknown[]) {
    if (!isPlainObject(s)) return false;
    for (const k in s) if (!SAMPLE_KEYS.has(k)) return false;
    const { name, value, time_ms: timeMs, labels } = s;
    if (typeof name !== 'string' || name.length > SAMPLE_NAME_MAX || !METRIC_NAME.test(name)) return false;
    if (typeof value !== 'number' || !Number.isFinite(value)) return false;
    if (timeMs !== undefined && (typeof timeMs !== 'number' || !Number.isSafeInteger(timeMs) || timeMs < 0))
      return false;
    if (labels === undefined) {
      s.labels = {};
      continue;
    }
    if (!isPlainObject(labels)) return false;
    let count = 0;
    for (const k in labels) {
      if (!Object.hasOwn(labels, k)) return false;
      const l = labels[k];
      if (k.length > LABEL_NAME_MAX || !LABEL_NAME.test(k) || RESERVED.has(k) || k === '__proto__') return false;
      if (typeof l !== 'string' || l.length > LABEL_VALUE_MAX) return false;
      if (++count > LABELS_PER_SAMPLE) return false;
    }
  }
  return true;
}

/**
 * MetricBatch as the metrics ingest parses it, ~10 times cheaper on the hot path: a batch the hand-written check
 * above accepts is taken as it is (the schema would give the same value); any other goes through MetricBatch
 * itself, so a refusal carries exactly the schema's issues (paths and messages) and whatever the schema accepts
 * beyond the fast check is still accepted, as the schema outputs it.
 */
export const MetricBatchIngest: z.ZodType<MetricBatch> = z.unknown().transform((input, ctx): MetricBatch => {
  if (fastMetricBatch(input)) return input;
  const parsed = MetricBatch.safeParse(input);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) ctx.addIssue({ ...issue });
  return z.NEVER;
});

// ---------------------------------------------------------------------------------------------------------------
// Agent events (file changes under watched paths).

export const FileChangeEvent = z.object({
  type: z.literal('file_change'),
  time: Time,
  path: z.string().min(1).max(4096),
  change: z.enum(['created', 'modified', 'deleted']),
  size_bytes: NonNeg.nullable().default(null),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable()
    .default(null),
  /** A sensitive file's content hash is never sent; the event only says that it changed. */
  sensitive: z.boolean().default(false),
});
export const AgentEventBatch = z.object({ events: z.array(FileChangeEvent).min(1).max(1_000) });
export type AgentEventBatch = z.infer<typeof AgentEventBatch>;

// ---------------------------------------------------------------------------------------------------------------
// Config: watch_files, fetched at start and pushed as commands.

export const WATCH_DEFAULT_MAX_FILE_SIZE = 1_048_576;
export const WatchFilesConfig = z.object({
  paths: z.array(z.string().min(1).max(4096)).min(1, 'must not be empty').max(1_000),
  exclude_patterns: z.array(z.string().min(1).max(4096)).max(1_000).default([]),
  sensitive_files: z.array(z.string().min(1).max(4096)).max(1_000).default([]),
  max_file_size: z
    .number()
    .int()
    .min(1)
    .max(1024 * 1024 * 1024)
    .default(WATCH_DEFAULT_MAX_FILE_SIZE),
});
export type WatchFilesConfig = z.infer<typeof WatchFilesConfig>;

export const CONFIG_TYPES = ['watch_files'] as const;
export const ConfigType = z.enum(CONFIG_TYPES);

/** Agent-facing request subjects, fixed by the spec (never namespaced): config fetch and commands, keyed by agent id. */
export const AGENT_CONFIG_PREFIX = 'svc.system.agent.config';
export const AGENT_COMMANDS_PREFIX = 'svc.system.commands';
export const agentConfigSubject = (agentId: string): string => `${AGENT_CONFIG_PREFIX}.${agentId}`;
export const agentCommandSubject = (agentId: string): string => `${AGENT_COMMANDS_PREFIX}.${agentId}`;

/** A command on `svc.system.commands.{agentID}`: type, config_type, version, payload (docs/api/fleet.md). */
export const ConfigUpdateCommand = z.object({
  type: z.literal('config_update'),
  config_type: ConfigType,
  version: z.number().int().min(1),
  payload: WatchFilesConfig,
});
export type ConfigUpdateCommand = z.infer<typeof ConfigUpdateCommand>;

/** Request on `svc.system.agent.config.{agentID}`: an empty object (the agent is the subject's last token). */
export const ConfigFetchRequest = z.object({}).strict();

export const ConfigFetchReply = z.object({
  agent_id: z.uuid(),
  host_id: z.uuid(),
  configs: z.array(
    z.object({
      config_type: ConfigType,
      version: z.number().int().min(1),
      payload: WatchFilesConfig,
      updated_at: Time,
    }),
  ),
  /** Fresh broker credentials when the agent's current ones pass half their lifetime; the agent rewrites its creds file. */
  credentials: z.object({ user_jwt: z.string(), expires_at: Time }).optional(),
});
export type ConfigFetchReply = z.infer<typeof ConfigFetchReply>;

/** Reply envelope of config fetch: agents cannot sign, so this side of the wire is plain JSON. */
export const AgentReply = <T extends z.ZodType>(data: T) =>
  z.union([
    z.object({ ok: z.literal(true), data }),
    z.object({ ok: z.literal(false), error: z.object({ code: z.string(), message: z.string() }) }),
  ]);
