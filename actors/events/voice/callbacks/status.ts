import { DomainError } from '../../../../contracts/errors.ts';
import { sql } from '../../../../platform/stores/sql.ts';
import type { EventsDeps, EventsHandlers } from '../../deps.ts';
import { scheduleRetry } from '../pager.ts';
import { callOf, groupOf, verified } from './call.ts';

/** Call outcomes after which nobody listened (the provider's CallStatus values). */
const UNANSWERED = new Set(['busy', 'no-answer', 'failed', 'canceled']);
const FINAL = new Set(['completed', ...UNANSWERED]);

/** A call's outcome: stored once it is final, and the group paged again while it still fires unacknowledged. */
export function statusHandlers(deps: EventsDeps): EventsHandlers {
  return {
    'svc.events.voice.status': async ({ path, params, signature }) => {
      const v = verified(deps, path, params, signature);
      const call = await callOf(deps, v, path, params);
      const status = (params.find(([k]) => k === 'CallStatus')?.[1] ?? '').slice(0, 32);
      if (status === '') throw new DomainError('bad_request', 'CallStatus is missing');
      // Only the first final outcome counts: a repeated callback never schedules a second retry.
      const [updated] = await sql<{ id: string }>(
        deps.orm.em.fork(),
        `UPDATE voice_calls SET status = ?, updated_at = now() WHERE id = ? AND status NOT IN ('completed', 'busy', 'no-answer', 'failed', 'canceled') RETURNING id`,
        [status, call.id],
      );
      // A notification's call is not called again: its rule's escalation steps are what follows an unanswered one.
      if (!updated || !FINAL.has(status) || call.alert_group_id === null) return {};
      const g = await groupOf(deps, call.alert_group_id);
      // Unanswered, or answered without the acknowledging key: call again while the group still fires.
      if (g.status === 'firing' && g.acknowledged_at === null && (UNANSWERED.has(status) || status === 'completed'))
        await scheduleRetry(deps, g.id, call.attempt);
      return {};
    },
  };
}
