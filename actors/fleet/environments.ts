import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import { ENVIRONMENT_IMMUTABLE, type Environment } from '../../contracts/domains/fleet.ts';
import { DomainError } from '../../contracts/errors.ts';
import { refuseChanges } from '../../contracts/immutable.ts';
import { conflictOnDuplicate, iso, pageOf, sql } from '../../platform/stores/sql.ts';
import { revokeAgents } from './agents/revocation.ts';
import type { FleetDeps, FleetHandlers } from './deps.ts';
import { loadClient, loadEnvironment, requireOnClient, type EnvironmentRow } from './scope.ts';

type EnvironmentOut = EnvironmentRow & { host_count: number };

/** Environment columns with the number of its hosts (`e` is the environments table). */
const COLUMNS = `e.id, e.client_id, e.name, e.slug, e.created_at, e.updated_at, (SELECT count(*)::int FROM hosts h WHERE h.environment_id = e.id) AS host_count`;

const out = (e: EnvironmentOut): Environment => ({
  id: e.id,
  client_id: e.client_id,
  name: e.name,
  slug: e.slug,
  host_count: e.host_count,
  created_at: iso(e.created_at),
  updated_at: iso(e.updated_at),
});

async function withCount(em: EntityManager, id: string): Promise<Environment> {
  const [row] = await sql<EnvironmentOut>(em, `SELECT ${COLUMNS} FROM environments e WHERE e.id = ?`, [id]);
  if (!row) throw new DomainError('not_found', 'environment not found');
  return out(row);
}

/** Environments of a client: created in it, renamed, deleted once they hold no hosts. */
export function environmentHandlers(deps: FleetDeps): FleetHandlers {
  const fork = (): EntityManager => deps.orm.em.fork();

  return {
    'svc.fleet.environments.list': async ({ client_id, page, per_page }, { ctx }) => {
      const em = fork();
      await loadClient(em, ctx, client_id, 'environments:read');
      return pageOf(
        em,
        {
          columns: COLUMNS,
          from: 'environments e WHERE e.client_id = ?',
          params: [client_id],
          order: 'lower(e.name) ASC, e.slug ASC, e.id ASC',
        },
        { page, per_page },
        (rows: EnvironmentOut[]) => rows.map(out),
      );
    },

    'svc.fleet.environments.get': async ({ id }, { ctx }) => {
      const em = fork();
      await loadEnvironment(em, ctx, id, 'environments:read');
      return withCount(em, id);
    },

    'svc.fleet.environments.create': async ({ client_id, name, slug }, { ctx }) => {
      requireOnClient(ctx, client_id, 'environments:write', 'client');
      const em = fork();
      const id = randomUUID();
      // Inserted only while the client exists: no foreign-key error for a client deleted meanwhile.
      const inserted = await conflictOnDuplicate('an environment with this slug already exists in this client', () =>
        sql<{ id: string }>(
          em,
          `INSERT INTO environments (id, client_id, name, slug) SELECT ?, id, ?, ? FROM clients WHERE id = ? RETURNING id`,
          [id, name, slug, client_id],
        ),
      );
      if (inserted.length === 0) throw new DomainError('not_found', 'client not found');
      await deps.audit.record(ctx, {
        action: 'environment.created',
        resource_type: 'environment',
        resource_id: id,
        client_ids: [client_id],
        details: { client_id, name, slug },
      });
      return withCount(em, id);
    },

    'svc.fleet.environments.update': async ({ id, name, ...fixed }, { ctx }) => {
      const em = fork();
      const before = await loadEnvironment(em, ctx, id, 'environments:write');
      refuseChanges(fixed, before, ENVIRONMENT_IMMUTABLE);
      if (before.name !== name) {
        await sql(em, `UPDATE environments SET name = ?, updated_at = now() WHERE id = ?`, [name, id]);
        await deps.audit.record(ctx, {
          action: 'environment.updated',
          resource_type: 'environment',
          resource_id: id,
          client_ids: [before.client_id],
          details: { client_id: before.client_id, changes: { name: { from: before.name, to: name } } },
        });
      }
      return withCount(em, id);
    },

    'svc.fleet.environments.delete': async ({ id }, { ctx }) => {
      const env = await fork().transactional(async (tx) => {
        // The row lock keeps an enrolment from adding a host (its insert references this row) until we are done.
        const env = await loadEnvironment(tx, ctx, id, 'environments:delete', true);
        const [hosts] = await sql<{ n: number }>(tx, `SELECT count(*)::int AS n FROM hosts WHERE environment_id = ?`, [
          id,
        ]);
        const n = hosts?.n ?? 0;
        if (n > 0)
          throw new DomainError(
            'conflict',
            `the environment still has ${n} host${n === 1 ? '' : 's'}: delete ${n === 1 ? 'it' : 'them'} first`,
          );
        // Install tokens and pending enrolments go with it (cascade); an agent that completed enrolment meanwhile
        // loses its credentials first.
        await revokeAgents(tx, deps.revoker, { sql: 'environment_id = ?', params: [id] });
        await sql(tx, `DELETE FROM environments WHERE id = ?`, [id]);
        return env;
      });
      await deps.audit.record(ctx, {
        action: 'environment.deleted',
        resource_type: 'environment',
        resource_id: id,
        client_ids: [env.client_id],
        details: { client_id: env.client_id, name: env.name, slug: env.slug },
      });
      return {};
    },
  };
}
