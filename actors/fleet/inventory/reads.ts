import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { SystemCatalogue } from '../../../contracts/catalogue.ts';
import type { CallerContext } from '../../../contracts/context.ts';
import type {
  Certificate,
  FirewallRule,
  HostCronJob,
  HostGpuDevice,
  HostInterface,
  HostPackage,
  HostPort,
  HostProcess,
  HostService,
  HostUser,
  KernelModule,
  SecurityItem,
} from '../../../contracts/domains/fleet-inventory.ts';
import type { Handlers } from '../../../platform/serve.ts';
import { iso, isoOrNull, pageOf, sql } from '../../../platform/stores/sql.ts';
import { loadHost } from '../scope.ts';

/** Host inventory reads (docs/api/fleet.md#inventory-routes): hosts:read on the host's client, 404 out of reach. */

const PERMISSION = 'hosts:read';

/** bigint columns arrive as strings; byte counts fit a double exactly up to 8 PiB. */
type Big = string | number;
const num = (v: Big): number => Number(v);
const numOrNull = (v: Big | null): number | null => (v === null ? null : Number(v));

/** A record as PostgreSQL hands it over: `Bigs` (bigint columns) and `Times` (timestamptz) not converted yet. */
type Row<T, Bigs extends keyof T = never, Times extends keyof T = never> = Omit<T, Bigs | Times> & {
  [K in Bigs]: null extends T[K] ? Big | null : Big;
} & {
  [K in Times]: null extends T[K] ? string | Date | null : string | Date;
};

const list = <R, T>(em: EntityManager, query: string, hostId: string, map: (r: R) => T): Promise<T[]> =>
  sql<R>(em, query, [hostId]).then((rows) => rows.map(map));

const SERVICE_COLUMNS = 'host_id, name, description, load_state, active_state, sub_state, enabled, main_pid, manager';
const PACKAGE_COLUMNS = 'host_id, name, version, architecture, manager, description, installed_size_bytes';
const PORT_COLUMNS =
  'host_id, protocol, local_address, local_port, remote_address, remote_port, state, pid, process_name';
const INTERFACE_COLUMNS =
  'host_id, name, mac_address, ipv4_addresses, ipv6_addresses, mtu, state, speed_mbps, rx_bytes, tx_bytes';
const USER_COLUMNS = 'host_id, username, uid, gid, home, shell, gecos, is_system, groups';
const PROCESS_COLUMNS =
  'pid, name, command, username, state, ppid, threads, cpu_percent, memory_percent, memory_rss_bytes, memory_vms_bytes, started_at';
const CRON_COLUMNS = 'id, host_id, username, schedule, command, source, is_active';
const GPU_COLUMNS =
  'id, host_id, device_index, name, vendor, driver_version, memory_total_bytes, pci_bus_id, architecture';
const FIREWALL_COLUMNS = 'id, host_id, chain, rule_number, target, protocol, port, tool, table_name, rule_text';
const CERTIFICATE_COLUMNS =
  'id, host_id, subject, issuer, not_before, not_after, fingerprint_sha256, is_ca, key_algorithm, key_bits';
const MODULE_COLUMNS = 'id, host_id, name, size_bytes, instances, used_by';
const SECURITY_COLUMNS = 'id, host_id, category, key, value';

const outPackage = (r: Row<HostPackage, 'installed_size_bytes'>): HostPackage => ({
  ...r,
  installed_size_bytes: numOrNull(r.installed_size_bytes),
});
const outInterface = (r: Row<HostInterface, 'rx_bytes' | 'tx_bytes'>): HostInterface => ({
  ...r,
  rx_bytes: num(r.rx_bytes),
  tx_bytes: num(r.tx_bytes),
});
const outUser = (r: Row<HostUser, 'uid' | 'gid'>): HostUser => ({ ...r, uid: num(r.uid), gid: num(r.gid) });
const outProcess = (r: Row<HostProcess, 'memory_rss_bytes' | 'memory_vms_bytes', 'started_at'>): HostProcess => ({
  ...r,
  memory_rss_bytes: num(r.memory_rss_bytes),
  memory_vms_bytes: num(r.memory_vms_bytes),
  started_at: isoOrNull(r.started_at),
});
const outGpu = (r: Row<HostGpuDevice, 'memory_total_bytes'>): HostGpuDevice => ({
  ...r,
  memory_total_bytes: numOrNull(r.memory_total_bytes),
});
const outCertificate = (r: Row<Certificate, never, 'not_before' | 'not_after'>): Certificate => ({
  ...r,
  not_before: iso(r.not_before),
  not_after: iso(r.not_after),
});
const outModule = (r: Row<KernelModule, 'size_bytes'>): KernelModule => ({ ...r, size_bytes: num(r.size_bytes) });
const same = <T>(r: T): T => r;

export function inventoryHandlers(deps: { orm: MikroORM }): Handlers<SystemCatalogue, 'fleet'> {
  const fork = (): EntityManager => deps.orm.em.fork();

  /** The host's check and the read share one fork: two statements, one connection at a time. */
  const ofHost =
    <R, T>(columns: string, table: string, order: string, map: (r: R) => T) =>
    async ({ id }: { id: string }, { ctx }: { ctx: CallerContext }): Promise<T[]> => {
      const em = fork();
      await loadHost(em, ctx, id, PERMISSION);
      return list(em, `SELECT ${columns} FROM ${table} WHERE host_id = ? ORDER BY ${order}`, id, map);
    };

  return {
    'svc.fleet.inventory.services': ofHost<HostService, HostService>(SERVICE_COLUMNS, 'host_services', 'name', same),
    'svc.fleet.inventory.packages': ofHost(PACKAGE_COLUMNS, 'host_packages', 'name, manager, architecture', outPackage),
    'svc.fleet.inventory.ports': ofHost<HostPort, HostPort>(
      PORT_COLUMNS,
      'host_ports',
      'local_port, protocol, local_address, ord',
      same,
    ),
    'svc.fleet.inventory.interfaces': ofHost(INTERFACE_COLUMNS, 'host_interfaces', 'name', outInterface),
    'svc.fleet.inventory.users': ofHost(USER_COLUMNS, 'host_users', 'username', outUser),
    'svc.fleet.inventory.gpu_devices': ofHost(GPU_COLUMNS, 'host_gpu_devices', 'device_index, id', outGpu),

    'svc.fleet.inventory.processes': async ({ id, page, per_page }, { ctx }) => {
      const em = fork();
      await loadHost(em, ctx, id, PERMISSION);
      return pageOf(
        em,
        {
          columns: PROCESS_COLUMNS,
          from: 'host_processes WHERE host_id = ?',
          params: [id],
          order: 'cpu_percent DESC, pid',
        },
        { page, per_page },
        (rows: Parameters<typeof outProcess>[0][]) => rows.map(outProcess),
      );
    },

    'svc.fleet.inventory.cron_jobs': async ({ id, page, per_page }, { ctx }) => {
      const em = fork();
      await loadHost(em, ctx, id, PERMISSION);
      return pageOf(
        em,
        { columns: CRON_COLUMNS, from: 'host_cron_jobs WHERE host_id = ?', params: [id], order: 'ord, id' },
        { page, per_page },
        (rows: HostCronJob[]) => rows,
      );
    },

    'svc.fleet.inventory.security': async ({ id }, { ctx }) => {
      await loadHost(fork(), ctx, id, PERMISSION);
      // Four independent reads, each on its own fork (its own pooled connection), at once.
      const [firewall_rules, certificates, kernel_modules, security_items] = await Promise.all([
        list<FirewallRule, FirewallRule>(
          fork(),
          `SELECT ${FIREWALL_COLUMNS} FROM host_firewall_rules WHERE host_id = ? ORDER BY ord, id`,
          id,
          same,
        ),
        list(
          fork(),
          `SELECT ${CERTIFICATE_COLUMNS} FROM host_certificates WHERE host_id = ? ORDER BY not_after, subject, id`,
          id,
          outCertificate,
        ),
        list(
          fork(),
          `SELECT ${MODULE_COLUMNS} FROM host_kernel_modules WHERE host_id = ? ORDER BY name, id`,
          id,
          outModule,
        ),
        list<SecurityItem, SecurityItem>(
          fork(),
          `SELECT ${SECURITY_COLUMNS} FROM host_security_items WHERE host_id = ? ORDER BY category, key, id`,
          id,
          same,
        ),
      ]);
      return { firewall_rules, certificates, kernel_modules, security_items };
    },
  };
}
