import { requireUser } from '../../../../contracts/access.ts';
import { DomainError } from '../../../../contracts/errors.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { canWriteAt, loadNote, out } from './rows.ts';

/** Deleting a note: by its author, a holder of annotations:write at its scope (a moderator) or a super admin. */
export function deleteNoteHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.annotations.delete': async ({ id }, { ctx }) => {
      const user = requireUser(ctx);
      const note = await deps.orm.em.fork().transactional(async (tx) => {
        const note = await loadNote(tx, ctx, id, true);
        const allowed = user.is_super_admin || note.created_by === user.user_id || canWriteAt(ctx, note);
        if (!allowed)
          throw new DomainError(
            'forbidden',
            'only the author, a holder of annotations:write at its scope or a super admin may delete this note',
          );
        await sql(tx, `DELETE FROM annotations WHERE id = ?`, [id]);
        return note;
      });
      await deps.audit.record(ctx, {
        action: 'annotation_deleted',
        resource_type: 'annotation',
        resource_id: id,
        client_ids: [note.client_id],
        details: { note: out(note) },
      });
      return {};
    },
  };
}
