import { z } from 'zod';
import { subjects } from '../subject.ts';
import { Paged, Paging } from '../paging.ts';

/**
 * Host inventory and integrations (docs/api/fleet.md#inventory-routes, #integrations): what the latest snapshot of
 * each host holds, and the collectors' status and configuration. Reads only; the agents write through telemetry
 * (contracts/domains/agent-telemetry.ts). Field lists follow the spec's record tables where it gives them; where it
 * says "not shown", a record is its table's columns without host-internal ones (`ord`). Byte counts are numbers.
 */

const Timestamp = z.iso.datetime();
const Id = z.uuid();
const Count = z.number().int().nonnegative();

const ByHost = z.object({ id: Id });

/** Processes: a page sorted by CPU, 50 per page unless asked (the spec's example). */
export const ProcessListQuery = z.object({ ...Paging, per_page: z.coerce.number().int().min(1).max(100).default(50) });
export const CronJobListQuery = z.object(Paging);

// ---------------------------------------------------------------------------------------------------------------
// Inventory records

export const HostService = z.object({
  host_id: Id,
  name: z.string(),
  description: z.string(),
  load_state: z.string(),
  active_state: z.string(),
  sub_state: z.string(),
  enabled: z.boolean().nullable(),
  main_pid: z.number().int().nullable(),
  manager: z.string(),
});
export type HostService = z.infer<typeof HostService>;

export const HostPackage = z.object({
  host_id: Id,
  name: z.string(),
  version: z.string(),
  architecture: z.string(),
  manager: z.string(),
  description: z.string(),
  installed_size_bytes: z.number().nullable(),
});
export type HostPackage = z.infer<typeof HostPackage>;

export const HostPort = z.object({
  host_id: Id,
  protocol: z.string(),
  local_address: z.string(),
  local_port: z.number().int(),
  remote_address: z.string(),
  remote_port: z.number().int(),
  state: z.string(),
  pid: z.number().int().nullable(),
  process_name: z.string(),
});
export type HostPort = z.infer<typeof HostPort>;

export const HostInterface = z.object({
  host_id: Id,
  name: z.string(),
  mac_address: z.string(),
  ipv4_addresses: z.array(z.string()),
  ipv6_addresses: z.array(z.string()),
  mtu: z.number().int().nullable(),
  state: z.string(),
  speed_mbps: z.number().int().nullable(),
  rx_bytes: z.number(),
  tx_bytes: z.number(),
});
export type HostInterface = z.infer<typeof HostInterface>;

export const HostUser = z.object({
  host_id: Id,
  username: z.string(),
  uid: z.number().int(),
  gid: z.number().int(),
  home: z.string(),
  shell: z.string(),
  gecos: z.string(),
  is_system: z.boolean(),
  groups: z.array(z.string()),
});
export type HostUser = z.infer<typeof HostUser>;

export const HostProcess = z.object({
  pid: z.number().int(),
  name: z.string(),
  command: z.string(),
  username: z.string(),
  state: z.string(),
  ppid: z.number().int(),
  threads: z.number().int(),
  cpu_percent: z.number(),
  memory_percent: z.number(),
  memory_rss_bytes: z.number(),
  memory_vms_bytes: z.number(),
  started_at: Timestamp.nullable(),
});
export type HostProcess = z.infer<typeof HostProcess>;

export const HostCronJob = z.object({
  id: Id,
  host_id: Id,
  username: z.string(),
  schedule: z.string(),
  command: z.string(),
  source: z.string(),
  is_active: z.boolean(),
});
export type HostCronJob = z.infer<typeof HostCronJob>;

export const HostGpuDevice = z.object({
  id: Id,
  host_id: Id,
  device_index: z.number().int(),
  name: z.string(),
  vendor: z.string(),
  driver_version: z.string(),
  memory_total_bytes: z.number().nullable(),
  pci_bus_id: z.string(),
  architecture: z.string(),
});
export type HostGpuDevice = z.infer<typeof HostGpuDevice>;

export const FirewallRule = z.object({
  id: Id,
  host_id: Id,
  chain: z.string(),
  rule_number: z.number().int(),
  target: z.string(),
  protocol: z.string(),
  port: z.string(),
  tool: z.string(),
  table_name: z.string(),
  rule_text: z.string(),
});
export type FirewallRule = z.infer<typeof FirewallRule>;

export const Certificate = z.object({
  id: Id,
  host_id: Id,
  subject: z.string(),
  issuer: z.string(),
  not_before: Timestamp,
  not_after: Timestamp,
  fingerprint_sha256: z.string(),
  is_ca: z.boolean(),
  key_algorithm: z.string(),
  key_bits: z.number().int().nullable(),
});
export type Certificate = z.infer<typeof Certificate>;

export const KernelModule = z.object({
  id: Id,
  host_id: Id,
  name: z.string(),
  size_bytes: z.number(),
  instances: z.number().int(),
  used_by: z.array(z.string()),
});
export type KernelModule = z.infer<typeof KernelModule>;

export const SecurityItem = z.object({ id: Id, host_id: Id, category: z.string(), key: z.string(), value: z.string() });
export type SecurityItem = z.infer<typeof SecurityItem>;

export const SecurityOverview = z.object({
  firewall_rules: z.array(FirewallRule),
  certificates: z.array(Certificate),
  kernel_modules: z.array(KernelModule),
  security_items: z.array(SecurityItem),
});
export type SecurityOverview = z.infer<typeof SecurityOverview>;

// ---------------------------------------------------------------------------------------------------------------
// Integrations

export const IntegrationStatus = z.enum(['ok', 'warning', 'error', 'unknown']);

/** Same rule as an agent's `integration_id` (agent-telemetry.ts): a malformed id is a 400, not a lookup. */
export const IntegrationId = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, 'lower-case letters, digits, _ or -');

export const IntegrationType = z.object({
  id: z.string(),
  name: z.string(),
  category: z.string(),
  description: z.string(),
  /** Hosts the caller can read (integrations:read on their client) that report this integration. */
  host_count: Count,
  status_summary: z.object({ ok: Count, warning: Count, error: Count, unknown: Count }),
});
export type IntegrationType = z.infer<typeof IntegrationType>;

export const IntegrationConfigEntry = z.object({
  value: z.union([z.string(), z.number(), z.boolean()]),
  unit: z.string().optional(),
  source: z.string(),
  category: z.string(),
});

export const HostIntegration = z.object({
  id: Id,
  host_id: Id,
  integration_id: z.string(),
  collector_name: z.string(),
  status: IntegrationStatus,
  status_message: z.string(),
  enabled: z.boolean(),
  config: z.record(z.string(), IntegrationConfigEntry),
  hostname: z.string(),
  last_seen_at: Timestamp,
});
export type HostIntegration = z.infer<typeof HostIntegration>;

const ByIntegration = z.object({ id: IntegrationId });
const HOST_ERRORS = ['forbidden', 'not_found'] as const;

export const fleetInventorySubjects = subjects({
  'svc.fleet.inventory.services': {
    retry: 'safe',
    summary: 'Services of a host, by name (hosts:read on its client).',
    request: ByHost,
    reply: z.array(HostService),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.packages': {
    retry: 'safe',
    summary: 'Installed packages of a host, by name, manager and architecture (hosts:read).',
    request: ByHost,
    reply: z.array(HostPackage),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.ports': {
    retry: 'safe',
    summary: 'Listening and connected ports of a host, by local port, protocol and address (hosts:read).',
    request: ByHost,
    reply: z.array(HostPort),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.interfaces': {
    retry: 'safe',
    summary: 'Network interfaces of a host, by name (hosts:read).',
    request: ByHost,
    reply: z.array(HostInterface),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.users': {
    retry: 'safe',
    summary: 'System users of a host, by username (hosts:read).',
    request: ByHost,
    reply: z.array(HostUser),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.processes': {
    retry: 'safe',
    summary: 'Processes of a host, highest CPU first (then pid), paginated (hosts:read).',
    request: ByHost.extend(ProcessListQuery.shape),
    reply: Paged(HostProcess),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.cron_jobs': {
    retry: 'safe',
    summary:
      'Crontab entries, cron.d files and timers of a host, in the order the agent found them, paginated (hosts:read).',
    request: ByHost.extend(CronJobListQuery.shape),
    reply: Paged(HostCronJob),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.gpu_devices': {
    retry: 'safe',
    summary: 'Discrete GPUs of a host, by device index (hosts:read).',
    request: ByHost,
    reply: z.array(HostGpuDevice),
    errors: [...HOST_ERRORS],
  },
  'svc.fleet.inventory.security': {
    retry: 'safe',
    summary:
      'Firewall rules, certificates, kernel modules and security items of a host, read in parallel (hosts:read).',
    request: ByHost,
    reply: SecurityOverview,
    errors: [...HOST_ERRORS],
  },

  'svc.fleet.integrations.list': {
    retry: 'safe',
    summary:
      'Every integration type with its host count and status summary over the hosts the caller can read (integrations:read).',
    request: z.object({}),
    reply: z.array(IntegrationType),
    errors: ['forbidden'],
  },
  'svc.fleet.integrations.get': {
    retry: 'safe',
    summary: 'One integration type, counted like the list (integrations:read; 404 unknown).',
    request: ByIntegration,
    reply: IntegrationType,
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.integrations.hosts': {
    retry: 'safe',
    summary: 'Hosts reporting one integration type, within the caller’s integrations:read scope.',
    request: ByIntegration,
    reply: z.array(HostIntegration),
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.integrations.of_host': {
    retry: 'safe',
    summary: 'Integrations on one host with collector status and config (integrations:read on its client).',
    request: ByHost,
    reply: z.array(HostIntegration),
    errors: ['forbidden', 'not_found'],
  },
  'svc.fleet.integrations.of_client': {
    retry: 'safe',
    summary: 'Integrations across every host of one client (integrations:read on it).',
    request: z.object({ id: Id }),
    reply: z.array(HostIntegration),
    errors: ['forbidden', 'not_found'],
  },
});
