import { randomUUID } from 'node:crypto';
import { requireUser } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { inReach, inReachOfEnvironment } from '../../../../platform/scope.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { canWriteAt, COLUMNS, out, type Row } from './rows.ts';

/** Creating a note on a host, an environment or a client, attributed to the signed-in user by name. */
export function createNoteHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.annotations.create': async (b, scope) => {
      const { ctx } = scope;
      const user = requireUser(ctx);
      const opts = { deadline: scope.deadline, traceparent: scope.traceparent };
      let place: { client_id: string; environment_id: string | null; host_id: string | null };
      if (b.scope === 'host') {
        const h = await deps.fleet.host(ctx, b.host_id!, opts);
        if (!h || !inReachOfEnvironment(ctx, h.client_id, h.environment_id))
          throw new DomainError('not_found', 'host not found');
        place = { client_id: h.client_id, environment_id: h.environment_id, host_id: h.id };
      } else if (b.scope === 'environment') {
        const e = await deps.fleet.environment(ctx, b.environment_id!, opts);
        if (!e || !inReachOfEnvironment(ctx, e.client_id, e.id))
          throw new DomainError('not_found', 'environment not found');
        place = { client_id: e.client_id, environment_id: e.id, host_id: null };
      } else {
        if (!inReach(ctx, b.client_id!)) throw new DomainError('not_found', 'client not found');
        const c = await deps.fleet.client(ctx, b.client_id!, opts);
        if (!c) throw new DomainError('not_found', 'client not found');
        place = { client_id: c.id, environment_id: null, host_id: null };
      }
      if (!canWriteAt(ctx, place))
        throw new DomainError('forbidden', `missing permission annotations:write on this ${b.scope}`);
      const { users } = await scope.call('svc.identity.lookup.user_names', { user_ids: [user.user_id] });
      const name = users[0]?.display_name || user.email;
      const id = randomUUID();
      const [row] = await sql<Row>(
        deps.orm.em.fork(),
        `INSERT INTO annotations (id, scope, kind, client_id, environment_id, host_id, "timestamp", ends_at, text, created_by, created_by_name)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
        [
          id,
          b.scope,
          b.kind,
          place.client_id,
          place.environment_id,
          place.host_id,
          b.timestamp,
          b.ends_at ?? null,
          b.text,
          user.user_id,
          name,
        ],
      );
      const note = out(row!);
      await deps.audit.record(ctx, {
        action: 'annotation_created',
        resource_type: 'annotation',
        resource_id: id,
        client_ids: [place.client_id],
        details: { note },
      });
      return note;
    },
  };
}
