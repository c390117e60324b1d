import { requireUser } from '../../../../contracts/access.ts';
import { IMMUTABLE_NOTE_FIELDS } from '../../../../contracts/domains/events-charts.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { refuseChanges } from '../../../../contracts/immutable.ts';
import { iso, isoOrNull, sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { canWriteAt, COLUMNS, loadNote, out, type Row } from './rows.ts';

/** Changing a note: by its author only, who must still hold annotations:write where it sits. */
export function updateNoteHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.annotations.update': async (b, { ctx }) => {
      const user = requireUser(ctx);
      const { before, after } = await deps.orm.em.fork().transactional(async (tx) => {
        const before = await loadNote(tx, ctx, b.id, true);
        if (before.created_by !== user.user_id)
          throw new DomainError('forbidden', 'only the author of a note may change it');
        if (!canWriteAt(ctx, before))
          throw new DomainError('forbidden', `missing permission annotations:write on this ${before.scope}`);
        refuseChanges(b, out(before), IMMUTABLE_NOTE_FIELDS);
        const [after] = await sql<Row>(
          tx,
          `UPDATE annotations SET kind = ?, "timestamp" = ?, ends_at = ?, text = ?, updated_at = now() WHERE id = ? RETURNING ${COLUMNS}`,
          [b.kind, b.timestamp, b.ends_at ?? null, b.text, b.id],
        );
        return { before, after: after! };
      });
      const pick = (r: Row) => ({
        kind: r.kind,
        timestamp: iso(r.timestamp),
        ends_at: isoOrNull(r.ends_at),
        text: r.text,
      });
      await deps.audit.record(ctx, {
        action: 'annotation_updated',
        resource_type: 'annotation',
        resource_id: b.id,
        client_ids: [before.client_id],
        details: { before: pick(before), after: pick(after) },
      });
      return out(after);
    },
  };
}
