import { randomUUID } from 'node:crypto';
import { DomainError } from '../../../contracts/errors.ts';
import { sql } from '../../../platform/stores/sql.ts';
import { trackerOf, type SdDeps, type SdHandlers } from '../deps.ts';
import { asCategory } from '../sync/normalize.ts';
import { dtoDate } from '../tracker/api.ts';
import { logAction, READ, resolveTarget, WRITE } from './target.ts';

/**
 * A request's workflow transitions: those it offers now, and one of them carried out, its resulting status shown
 * (as pending) until the sync stores it.
 */
export function transitionHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.transitions.list': async ({ issue_key }, { ctx, deadline, signal }) => {
      const t = await resolveTarget(deps, ctx, issue_key, READ, { deadline, signal });
      return {
        items: (await trackerOf(deps).transitions(t.issue_key, { deadline, signal })).map((x) => ({
          id: x.id,
          name: x.name,
        })),
      };
    },

    'svc.servicedesk.transitions.execute': async ({ issue_key, id, comment }, { ctx, deadline, signal }) => {
      const api = trackerOf(deps);
      const t = await resolveTarget(deps, ctx, issue_key, WRITE, { deadline, signal });
      // Only a transition the request offers right now: its id is taken from the request's own list.
      const offered = await api.transitions(t.issue_key, { deadline, signal });
      const chosen = offered.find((x) => x.id === id);
      if (!chosen)
        throw new DomainError(
          'bad_request',
          `transition ${id} is not available for request ${t.issue_key}; take an id from GET .../transitions`,
        );
      await api.transition(t.issue_key, id, comment, { deadline, signal });
      // The status the request has now, shown until the sync stores it. Unreadable: no override at all (a transition's
      // name is not a status, and a guess could be wrong); the stored status shows until the sync catches up.
      const now = await api.request(t.issue_key, { deadline, signal }).catch((err: unknown) => {
        deps.log.warn(
          { err, issue_key: t.issue_key },
          'the request could not be read after its transition; its new status shows once the sync stores it',
        );
        return undefined;
      });
      const status = now?.currentStatus?.status ?? null;
      const category = status === null ? null : asCategory(now?.currentStatus?.statusCategory?.toLowerCase());
      if (status !== null) {
        const at = dtoDate(now?.currentStatus?.statusDate) ?? new Date();
        await sql(
          deps.orm.em.fork(),
          `INSERT INTO sd_pending (id, issue_key, kind, organization_id, status, status_category, effective_at) VALUES (?, ?, 'transition', ?, ?, ?, ?)`,
          [randomUUID(), t.issue_key, t.mapping.organization_id, status, category, at.toISOString()],
        );
        await deps.memo.bump();
      } else if (now)
        deps.log.warn(
          { issue_key: t.issue_key },
          'the request read after its transition carried no status; its new status shows once the sync stores it',
        );
      await logAction(deps, ctx, t.issue_key, t.mapping, 'transition', {
        transition_id: id,
        transition: chosen.name,
        status,
        ...(comment ? { with_comment: true } : {}),
        ...(t.asked !== t.issue_key ? { via: t.asked } : {}),
      });
      return { issue_key: t.issue_key, transition_id: id, status, status_category: category };
    },
  };
}
