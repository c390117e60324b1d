import { iso, pageOf } from '../../../../platform/stores/sql.ts';
import type { SdDeps, SdHandlers } from '../../deps.ts';
import { locateForRead } from '../locate.ts';

/** One page of a request's action log: the writes made to it through this service, newest first. */
export function actionLogHandlers(deps: SdDeps): SdHandlers {
  return {
    'svc.servicedesk.actions.list': async ({ issue_key, organization_id, page, per_page }, { ctx }) => {
      const em = deps.orm.em.fork();
      // The log is kept under the support key; an engineering key finds it through its link.
      const key = (await locateForRead(em, ctx, issue_key, organization_id)).issue_key;
      return pageOf(
        em,
        {
          columns: 'id, issue_key, action, actor_id, actor_email, details, created_at',
          from: 'sd_actions WHERE issue_key = ?',
          params: [key],
          order: 'created_at DESC, id',
        },
        { page, per_page },
        (
          rows: {
            id: string;
            issue_key: string;
            action: string;
            actor_id: string | null;
            actor_email: string | null;
            details: Record<string, unknown>;
            created_at: string;
          }[],
        ) => rows.map((a) => ({ ...a, created_at: iso(a.created_at) })),
      );
    },
  };
}
