import type { InventorySnapshot } from '../../../contracts/domains/agent-telemetry.ts';

/** The array members of a snapshot that land in a `host_*` table of their own. */
export type InventoryMember = Exclude<
  {
    [K in keyof InventorySnapshot]: InventorySnapshot[K] extends readonly unknown[] ? K : never;
  }[keyof InventorySnapshot],
  'integrations'
>;

/**
 * How one snapshot member is stored. Each record's fields are the table's columns (the migration and the telemetry
 * contract agree on names), read in SQL with `jsonb_to_recordset` using the types below.
 * - `key`: the natural key (the table's primary key after host_id). Records repeating a key are duplicates: the first
 *   is kept. The table is then synchronised by difference: unchanged rows are not written at all.
 * - `ordered`: the record's position is stored as `ord` and is the key (records have no identity of their own and
 *   their order means something, e.g. firewall rules).
 * - neither: the table is replaced (small tables whose records have no identity).
 * - `id`: the table has a generated uuid `id` (kept for unchanged rows when the table is synchronised).
 */
export interface InventoryTable {
  member: InventoryMember;
  table: string;
  columns: Readonly<Record<string, string>>;
  key?: readonly string[];
  ordered?: true;
  id?: true;
}

export const INVENTORY_TABLES: readonly InventoryTable[] = [
  {
    member: 'processes',
    table: 'host_processes',
    key: ['pid'],
    columns: {
      pid: 'integer',
      name: 'text',
      command: 'text',
      username: 'text',
      state: 'text',
      ppid: 'integer',
      threads: 'integer',
      cpu_percent: 'double precision',
      memory_percent: 'double precision',
      memory_rss_bytes: 'bigint',
      memory_vms_bytes: 'bigint',
      started_at: 'timestamptz',
    },
  },
  {
    member: 'services',
    table: 'host_services',
    key: ['name'],
    columns: {
      name: 'text',
      description: 'text',
      load_state: 'text',
      active_state: 'text',
      sub_state: 'text',
      enabled: 'boolean',
      main_pid: 'integer',
      manager: 'text',
    },
  },
  {
    member: 'packages',
    table: 'host_packages',
    key: ['manager', 'name', 'architecture'],
    columns: {
      name: 'text',
      version: 'text',
      architecture: 'text',
      manager: 'text',
      description: 'text',
      installed_size_bytes: 'bigint',
    },
  },
  {
    member: 'ports',
    table: 'host_ports',
    ordered: true,
    columns: {
      protocol: 'text',
      local_address: 'text',
      local_port: 'integer',
      remote_address: 'text',
      remote_port: 'integer',
      state: 'text',
      pid: 'integer',
      process_name: 'text',
    },
  },
  {
    member: 'interfaces',
    table: 'host_interfaces',
    key: ['name'],
    columns: {
      name: 'text',
      mac_address: 'text',
      ipv4_addresses: 'text[]',
      ipv6_addresses: 'text[]',
      mtu: 'integer',
      state: 'text',
      speed_mbps: 'integer',
      rx_bytes: 'bigint',
      tx_bytes: 'bigint',
    },
  },
  {
    member: 'users',
    table: 'host_users',
    key: ['username'],
    columns: {
      username: 'text',
      uid: 'bigint',
      gid: 'bigint',
      home: 'text',
      shell: 'text',
      gecos: 'text',
      is_system: 'boolean',
      groups: 'text[]',
    },
  },
  {
    member: 'cron_jobs',
    table: 'host_cron_jobs',
    ordered: true,
    id: true,
    columns: { username: 'text', schedule: 'text', command: 'text', source: 'text', is_active: 'boolean' },
  },
  {
    member: 'gpu_devices',
    table: 'host_gpu_devices',
    id: true,
    columns: {
      device_index: 'integer',
      name: 'text',
      vendor: 'text',
      driver_version: 'text',
      memory_total_bytes: 'bigint',
      pci_bus_id: 'text',
      architecture: 'text',
    },
  },
  {
    member: 'firewall_rules',
    table: 'host_firewall_rules',
    ordered: true,
    id: true,
    columns: {
      chain: 'text',
      rule_number: 'integer',
      target: 'text',
      protocol: 'text',
      port: 'text',
      tool: 'text',
      table_name: 'text',
      rule_text: 'text',
    },
  },
  {
    member: 'certificates',
    table: 'host_certificates',
    id: true,
    columns: {
      subject: 'text',
      issuer: 'text',
      not_before: 'timestamptz',
      not_after: 'timestamptz',
      fingerprint_sha256: 'text',
      is_ca: 'boolean',
      key_algorithm: 'text',
      key_bits: 'integer',
      path: 'text',
    },
  },
  {
    member: 'kernel_modules',
    table: 'host_kernel_modules',
    id: true,
    columns: { name: 'text', size_bytes: 'bigint', instances: 'integer', used_by: 'text[]' },
  },
  {
    member: 'security_items',
    table: 'host_security_items',
    id: true,
    columns: { category: 'text', key: 'text', value: 'text' },
  },
  {
    member: 'containers',
    table: 'host_containers',
    key: ['container_id'],
    columns: {
      container_id: 'text',
      name: 'text',
      image: 'text',
      state: 'text',
      status: 'text',
      runtime: 'text',
      created_at: 'timestamptz',
      labels: 'jsonb',
    },
  },
];

const q = (ident: string): string => `"${ident}"`;

/** The statements that bring one host's table to a snapshot member (parameters in the order given). */
export interface TableStatements {
  /** Removes what the snapshot no longer has (sync) or everything (replace): params [hostId, json?]. */
  remove: { sql: string; params: (hostId: string, json: string) => unknown[] };
  /** Adds what the table does not have yet (sync) or everything (replace); skipped when the member is empty. */
  add: { sql: string; params: (hostId: string, json: string) => unknown[] };
}

/**
 * Built once per table. Synchronised tables compare whole rows with EXCEPT (hashed, NULL-safe): a row equal to one of
 * the snapshot stays untouched, so a snapshot whose 2,000 packages did not change writes no package row.
 */
export function statementsFor(t: InventoryTable): TableStatements {
  const cols = [...(t.ordered ? ['ord'] : []), ...Object.keys(t.columns)];
  const defs = [
    ...(t.ordered ? ['ord integer'] : []),
    ...Object.entries(t.columns).map(([c, type]) => `${q(c)} ${type}`),
  ].join(', ');
  const list = cols.map(q).join(', ');
  const source = `jsonb_to_recordset(?::jsonb) AS src(${defs})`;
  const insertCols = `host_id, ${t.id ? 'id, ' : ''}${list}`;
  const insertVals = `?::uuid, ${t.id ? 'gen_random_uuid(), ' : ''}${list}`;
  const key = t.ordered ? ['ord'] : t.key;
  if (!key) {
    return {
      remove: { sql: `DELETE FROM ${t.table} WHERE host_id = ?`, params: (h) => [h] },
      add: {
        sql: `INSERT INTO ${t.table} (${insertCols}) SELECT ${insertVals} FROM ${source}`,
        params: (h, json) => [h, json],
      },
    };
  }
  const keyList = key.map(q).join(', ');
  const current = `SELECT ${list} FROM ${t.table} WHERE host_id = ?`;
  return {
    remove: {
      sql: `DELETE FROM ${t.table} WHERE host_id = ? AND (${keyList}) IN (SELECT ${keyList} FROM (${current} EXCEPT SELECT ${list} FROM ${source}) gone)`,
      params: (h, json) => [h, h, json],
    },
    add: {
      sql: `INSERT INTO ${t.table} (${insertCols}) SELECT ${insertVals} FROM (SELECT ${list} FROM ${source} EXCEPT ${current}) fresh`,
      params: (h, json) => [h, json, h],
    },
  };
}
