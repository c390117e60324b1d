import type { MikroORM } from '@mikro-orm/postgresql';
import type { ClientRef, EnvironmentRef, HostRef } from '../../contracts/domains/fleet-lookup.ts';
import { sql } from '../../platform/stores/sql.ts';
import type { FleetHandlers } from './deps.ts';

/**
 * Lookups other domains make about clients, environments and hosts (contracts/domains/fleet-lookup.ts). Service-only
 * subjects: the asking domain authorizes its caller against the ids and tenants answered here.
 */
export function hostLookupHandlers(deps: { orm: MikroORM }): FleetHandlers {
  return {
    'svc.fleet.lookup.resolve': async ({ client_ids, environment_ids, host_ids }) => {
      const em = deps.orm.em.fork();
      const [clients, environments, hosts] = await Promise.all([
        client_ids.length > 0
          ? sql<ClientRef>(em, `SELECT id, name FROM clients WHERE id IN (?)`, [client_ids])
          : Promise.resolve([]),
        environment_ids.length > 0
          ? sql<EnvironmentRef>(em, `SELECT id, client_id, name FROM environments WHERE id IN (?)`, [environment_ids])
          : Promise.resolve([]),
        host_ids.length > 0
          ? sql<HostRef>(em, `SELECT id, environment_id, client_id, hostname FROM hosts WHERE id IN (?)`, [host_ids])
          : Promise.resolve([]),
      ]);
      return { clients, environments, hosts };
    },

    'svc.fleet.lookup.match_host': async ({ client_id, environment_id, names }) => {
      const em = deps.orm.em.fork();
      const lowered = [...new Set(names.map((n) => n.trim().toLowerCase()).filter((n) => n.length > 0))];
      if (lowered.length === 0) return { host: null };
      // Exact hostname or IP first; a short name (`web-1` for `web-1.example.com`, or the other way round) only when
      // nothing matched exactly. Several hosts for one name are ambiguous: no host rather than a wrong one.
      const rows = await sql<HostRef & { exact: boolean }>(
        em,
        `SELECT id, environment_id, client_id, hostname,
                (lower(hostname) IN (?) OR ip_address IN (?)) AS exact
           FROM hosts
          WHERE client_id = ? AND (?::uuid IS NULL OR environment_id = ?)
            AND (lower(hostname) IN (?) OR ip_address IN (?) OR split_part(lower(hostname), '.', 1) IN (?) OR lower(hostname) IN (?))
          LIMIT 20`,
        [
          lowered,
          lowered,
          client_id,
          environment_id,
          environment_id,
          lowered,
          lowered,
          lowered.map((n) => n.split('.')[0]!),
          lowered.map((n) => n.split('.')[0]!),
        ],
      );
      const exact = rows.filter((r) => r.exact);
      const pick = exact.length > 0 ? exact : rows;
      if (pick.length !== 1) return { host: null };
      const { exact: _exact, ...host } = pick[0]!;
      return { host };
    },
  };
}
