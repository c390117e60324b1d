import type { EventsDeps, EventsHandlers } from '../deps.ts';
import { createNoteHandlers } from './notes/create.ts';
import { deleteNoteHandlers } from './notes/delete.ts';
import { listNotesHandlers } from './notes/list.ts';
import { updateNoteHandlers } from './notes/update.ts';

/**
 * Notes on charts (docs/api/events.md#notes-on-charts):
 * - written by signed-in users only (API keys 403) holding `annotations:write` at the note's scope: on the host's or
 *   environment's environment (or client-wide) for host and environment notes, client-wide for client notes;
 * - read through `metrics:read`: a note the caller's metrics:read does not cover is 404 for every route;
 * - changed by their author only (super admins included), who must still hold annotations:write there;
 * - deleted by their author, by any holder of annotations:write at their scope (a moderator) or by a super admin.
 * Each route is in notes/, in a file named after it; notes/rows.ts holds the stored row and the shared checks.
 */
export function noteHandlers(deps: EventsDeps): EventsHandlers {
  return {
    ...createNoteHandlers(deps),
    ...listNotesHandlers(deps),
    ...updateNoteHandlers(deps),
    ...deleteNoteHandlers(deps),
  };
}
